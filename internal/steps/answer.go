package steps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/board"
)

// WaitingInput finds the waiting visit of label (any visit when visit
// is 0).
func WaitingInput(run board.Run, label string, visit int) (board.WaitingInput, bool) {
	for _, w := range run.Waiting {
		if w.Label == label && (visit == 0 || w.Visit == visit) {
			return w, true
		}
	}
	return board.WaitingInput{}, false
}

// Settle checks a against the run and its recordings, one rule for every
// place an answer comes in: the visit must wait for an answer (or have
// one already), the answer must fit the step's form. It returns the
// answer normalised, with its visit filled in, and whether exactly this
// answer was recorded before (answering again is harmless); a different
// answer to an answered visit is a conflict.
func Settle(run board.Run, recs []board.Recording, a board.Answer) (board.Answer, bool, error) {
	w, waiting := WaitingInput(run, a.Label, a.Visit)
	if a.Visit == 0 {
		a.Visit = w.Visit
		if !waiting {
			a.Visit = lastAnswered(recs, a.Label)
		}
	}
	prev, answered := FindAnswer(recs, a.Label, a.Visit)
	if !waiting && !answered {
		return a, false, fmt.Errorf("step %s is %w%s", VisitName(a.Label, a.Visit), board.ErrNotWaiting, waitingList(run.Waiting))
	}
	if waiting {
		form, err := ParseForm(w.Form)
		if err != nil {
			return a, false, fmt.Errorf("step %s: the saved form: %v", a.Label, err)
		}
		ans, err := form.Check(a.Answer)
		if err != nil {
			return a, false, fmt.Errorf("step %s: %w: %v", VisitName(a.Label, a.Visit), board.ErrBadAnswer, err)
		}
		a.Answer = ans
		a.Asked = AskedOf(w, form)
	}
	if answered {
		if !sameJSON(prev.Answer, a.Answer) {
			by := ""
			if prev.By != "" {
				by = " by " + prev.By
			}
			return a, false, fmt.Errorf("conflict: step %s was %w with %s%s; a different answer is refused",
				VisitName(a.Label, a.Visit), board.ErrAnswerConflict, jsonText(prev.Answer), by)
		}
		return a, true, nil
	}
	return a, false, nil
}

// AskedOf is what the waiting visit w shows a person: its rendered
// question and form's fields.
func AskedOf(w board.WaitingInput, form *Form) *board.Asked {
	a := &board.Asked{Prompt: w.Prompt}
	if form == nil {
		return a
	}
	req := map[string]bool{}
	for _, r := range form.Required {
		req[r] = true
	}
	for _, f := range form.Fields {
		a.Fields = append(a.Fields, board.AskedField{Name: f.Name, Type: f.Type, Description: f.Description, Required: req[f.Name]})
	}
	return a
}

// MayAnswer says whether who, a person known for sure (the
// operating-system user, serve's trusted proxy header or per-person
// token), may answer w: anyone may when w names no answerers; otherwise
// who must be one of them, and an unknown person ("") is refused.
func MayAnswer(w board.WaitingInput, who string) error {
	if len(w.Answerers) == 0 {
		return nil
	}
	name := VisitName(w.Label, w.Visit)
	list := strings.Join(w.Answerers, ", ")
	for _, a := range w.Answerers {
		if who != "" && a == who {
			return nil
		}
	}
	if who == "" {
		return fmt.Errorf("step %s: whoever answers here %w (%s): who answers is not known for sure here "+
			"(runner answer knows the operating-system user; serve a per-person token or a trusted proxy header); it keeps waiting", name, board.ErrNotAnswerer, list)
	}
	return fmt.Errorf("step %s: %s %w (%s); it keeps waiting", name, who, board.ErrNotAnswerer, list)
}

// AnswerRecording is the board recording of an answer.
func AnswerRecording(a board.Answer) board.Recording {
	resp, _ := json.Marshal(InputAnswer{Answer: a.Answer, By: a.By, Asked: a.Asked})
	return board.Recording{Label: a.Label, Visit: a.Visit, Kind: KindInput, Agent: a.By, Response: resp}
}

// VisitName is how a step visit is named to people: the label, with
// #visit after the first.
func VisitName(label string, visit int) string {
	if visit > 1 {
		return fmt.Sprintf("%s#%d", label, visit)
	}
	return label
}

func lastAnswered(recs []board.Recording, label string) int {
	v := 0
	for _, r := range recs {
		if r.Kind == KindInput && r.Label == label && r.Visit > v {
			v = r.Visit
		}
	}
	return v
}

func waitingList(ws []board.WaitingInput) string {
	if len(ws) == 0 {
		return " (the run waits for none)"
	}
	var s []string
	for _, w := range ws {
		s = append(s, VisitName(w.Label, w.Visit))
	}
	return " (it waits for: " + strings.Join(s, ", ") + ")"
}

func sameJSON(a, b map[string]any) bool { return bytes.Equal([]byte(jsonText(a)), []byte(jsonText(b))) }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
