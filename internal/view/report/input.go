package report

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"gopkg.in/yaml.v3"
)

// waitView is an input the run waits at: what it asks, its form, and
// the line that answers it.
type waitView struct {
	Label    string
	Visit    int
	Name     string
	Prompt   string
	Fields   []fieldView
	Since    string
	Waiting  string // how long it has waited, at the time the page was made
	Deadline string
	Command  string
}

type fieldView struct {
	Name, Type, Description, Enum string
	Options                       []string // the enum's values, as an answer gives them
	Required                      bool
}

// answerView is an input that was answered: its question, the answer,
// who gave it and how long the run waited for it.
type answerView struct {
	Question string
	// Fields are the form's fields as the person saw them (recorded
	// with the answer; none for an answer recorded without them).
	Fields []fieldView
	// FromPlan: the question is the plan's prompt as written (the
	// answered visit's rendered prompt is not recorded).
	FromPlan bool
	Answer   string
	By       string
	Default  bool // the timeout passed and the input took its default
	Waited   string
}

// waiting builds the waiting inputs of run; boardPath names the run in
// their answer lines ("" : its id).
func waiting(run board.Run, boardPath string, now time.Time) []waitView {
	who := boardPath
	if who == "" {
		who = run.ID
	}
	var out []waitView
	for _, w := range run.Waiting {
		wv := waitView{Label: w.Label, Visit: w.Visit, Name: visitName(w.Label, w.Visit), Prompt: strings.TrimSpace(w.Prompt),
			Since: w.Since.UTC().Format("2006-01-02 15:04:05 MST"), Waiting: dur(now.Sub(w.Since)),
			Command: runs.AnswerCommand(engine.ShellQuote(who), w)}
		if w.Deadline != nil {
			wv.Deadline = w.Deadline.UTC().Format("2006-01-02 15:04:05 MST")
		}
		if form, err := steps.ParseForm(w.Form); err == nil {
			req := map[string]bool{}
			for _, r := range form.Required {
				req[r] = true
			}
			for _, f := range form.Fields {
				fv := fieldView{Name: f.Name, Type: f.Type, Description: strings.TrimSpace(f.Description), Required: req[f.Name]}
				if len(f.Enum) > 0 {
					// As written: the page escapes it, JSON need not.
					var buf strings.Builder
					enc := json.NewEncoder(&buf)
					enc.SetEscapeHTML(false)
					enc.Encode(f.Enum)
					fv.Enum = strings.TrimSpace(buf.String())
					for _, e := range f.Enum {
						fv.Options = append(fv.Options, fmt.Sprint(e))
					}
				}
				wv.Fields = append(wv.Fields, fv)
			}
		}
		out = append(out, wv)
	}
	return out
}

// answered is the view of an input step's visit: the recorded prompt
// (an input of the record) or else the plan's, the answer, who answered,
// and how long the run waited: from the visit's first clock reading (when
// it began to wait) to the visit's end.
func answered(rec board.StepRecord, res map[string]any, plan *runPlan, clocks *clockIndex) *answerView {
	a := &answerView{Question: strings.TrimSpace(rec.Inputs["prompt"])}
	if asked := clocks.asked(rec.Label, rec.Visit); asked != nil {
		a.Question = strings.TrimSpace(asked.Prompt)
		for _, f := range asked.Fields {
			a.Fields = append(a.Fields, fieldView{Name: f.Name, Type: f.Type, Description: strings.TrimSpace(f.Description), Required: f.Required})
		}
	}
	if a.Question == "" {
		a.Question = strings.TrimSpace(plan.prompt(rec.Label))
		a.FromPlan = strings.Contains(a.Question, "${{") // else it is the question asked
	}
	if res != nil {
		a.Answer = text(res["answer"])
		a.By = text(res["by"])
		a.Default = res["default"] == true
	}
	if r, ok := clocks.first(rec.Label, rec.Visit); ok {
		var since time.Time
		if json.Unmarshal(r.Response, &since) == nil && !since.IsZero() && !rec.FinishedAt.Before(since) {
			a.Waited = dur(rec.FinishedAt.Sub(since))
		}
	}
	return a
}

// clockIndex finds a step visit's first clock reading (when an input
// started waiting). Each input step looked through all the run's
// recordings: a run of many inputs and many recordings cost their
// product. It is built on the first ask, once per page.
type clockIndex struct {
	recs  []board.Recording
	clock map[clockAt]int // index in recs
	// answers: each visit's recorded answer, by the same pass.
	answers map[clockAt]int
}

type clockAt struct {
	label string
	visit int
}

func (x *clockIndex) first(label string, visit int) (board.Recording, bool) {
	x.index()
	i, ok := x.clock[clockAt{label, visit}]
	if !ok {
		return board.Recording{}, false
	}
	return x.recs[i], true
}

func (x *clockIndex) index() {
	if x.clock != nil {
		return
	}
	x.clock, x.answers = map[clockAt]int{}, map[clockAt]int{}
	for i, r := range x.recs {
		k := clockAt{r.Label, r.Visit}
		switch r.Kind {
		case engine.KindClock:
			if _, dup := x.clock[k]; !dup {
				x.clock[k] = i
			}
		case steps.KindInput:
			if _, dup := x.answers[k]; !dup {
				x.answers[k] = i
			}
		}
	}
	clockRecordingsRead.Add(int64(len(x.recs)))
}

// asked is what the person answering label's visit was shown, as
// recorded with the answer (nil: not recorded).
func (x *clockIndex) asked(label string, visit int) *board.Asked {
	x.index()
	i, ok := x.answers[clockAt{label, visit}]
	if !ok {
		return nil
	}
	var a steps.InputAnswer
	if json.Unmarshal(x.recs[i].Response, &a) != nil {
		return nil
	}
	return a.Asked
}

// clockRecordingsRead counts the recordings looked through for clock
// readings, for a test: each once per page, however many inputs.
var clockRecordingsRead atomic.Int64

// field is the scalar value of key in a step's YAML mapping.
func field(n *yaml.Node, key string) string {
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.ScalarNode {
			return n.Content[i+1].Value
		}
	}
	return ""
}
