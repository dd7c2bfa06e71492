package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/patch"
)

// editRate is one row of "edits applied on the first try": of the model
// answers an apply_diff step applied, how many applied at once, per agent
// and edit format. Aider publishes the same share as "well-formed".
type editRate struct {
	Agent, Format    string
	Answers, Applied int
	Percent          string
}

// editRates matches each visit that applied an edit (engine.ShowsEdit:
// apply_diff) to the model's answer it applied (the latest visit of a
// ShowsModel step before it whose output is the text it was given)
// and counts, per agent and format, the answers whose first apply
// succeeded. A later apply of the same answer is not a first try. typ
// gives step record i's type, step the record of a model's or an edit's
// visit (without its inputs), diff an edit's diff.
func editRates(n int, typ func(i int) string, step func(i int) board.StepRecord, shows func(typ string) engine.Shows, diff func(i int) string) []editRate {
	type answer struct{ agent, text string }
	var answers []answer
	tried := map[string]bool{}
	rows := map[[2]string]*editRate{}
	for i := range n {
		sh := shows(typ(i))
		if !sh.Any(engine.ShowsModel | engine.ShowsEdit) {
			continue
		}
		rec := step(i)
		switch {
		case sh.Has(engine.ShowsModel):
			var res struct {
				Output any    `json:"output"`
				Agent  string `json:"agent"`
			}
			if json.Unmarshal(rec.Result, &res) == nil {
				if s, ok := res.Output.(string); ok && strings.TrimSpace(s) != "" {
					answers = append(answers, answer{res.Agent, strings.TrimSpace(s)})
				}
			}
		case sh.Has(engine.ShowsEdit):
			d := strings.TrimSpace(diff(i))
			if d == "" || tried[d] {
				continue
			}
			agent := ""
			for i := len(answers) - 1; i >= 0; i-- {
				if answers[i].text == d {
					agent = answers[i].agent
					break
				}
			}
			if agent == "" {
				continue // not a model's answer (a file, a fixed diff)
			}
			tried[d] = true
			format := "unreadable"
			if found, err := patch.Check([]byte(d), patch.FormatAuto); err == nil {
				format = strings.Join(found, "+")
			}
			k := [2]string{agent, format}
			if rows[k] == nil {
				rows[k] = &editRate{Agent: agent, Format: format}
			}
			rows[k].Answers++
			if rec.Status == "succeeded" {
				rows[k].Applied++
			}
		}
	}
	var out []editRate
	for _, r := range rows {
		r.Percent = percent(r.Applied, r.Answers)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Format < out[j].Format
	})
	return out
}

func percent(n, of int) string {
	if of == 0 {
		return "—"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", 100*float64(n)/float64(of)), ".0") + "%"
}
