package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/steps"
)

const answerUsage = "answer BLACKBOARD --step LABEL[#VISIT] (--json '{...}' | --set FIELD=VALUE...) [--by NAME] [--resume]"

// cmdAnswer records a person's answer to an input step a run waits at.
// The answer is checked against the step's form, recorded on the board
// (so a replay takes it from there), and idempotent: the same answer again
// succeeds, a different one is refused as a conflict.
func cmdAnswer(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("answer", stderr)
	stepFlag := fs.String("step", "", "the input step to answer: LABEL, or LABEL#VISIT")
	jsonFlag := fs.String("json", "", "the answer, a JSON object of the form's fields")
	var sets stringList
	fs.Var(&sets, "set", "one field of the answer, FIELD=VALUE, read as the form's type says (repeatable)")
	by := fs.String("by", os.Getenv("USER"), "who answers (recorded with the answer)")
	resume := fs.Bool("resume", false, "resume the run once the answer is recorded")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one blackboard.json, got %d arguments", len(pos))
	}
	if *stepFlag == "" {
		return usageErr(stderr, fs, "--step LABEL is required")
	}
	if *jsonFlag != "" && len(sets) > 0 {
		return usageErr(stderr, fs, "give the answer with --json or with --set, not both")
	}
	label, visit, err := splitVisit(*stepFlag)
	if err != nil {
		return usageErr(stderr, fs, "--step: %v", err)
	}
	path := pos[0]
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "runner answer: "+format+"\n", a...)
		return code
	}
	if _, err := os.Stat(path); err != nil {
		return fail(exitUsage, "%v", err)
	}
	lock, err := board.TryLock(path, board.Owner{Kind: board.OwnerCLI})
	if err != nil {
		return fail(exitUsage, "%v (a run answers its inputs once it waits, not while it runs)", err)
	}
	defer lock.Unlock()
	saved, err := board.Load(path)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	run := saved.Run()
	g.learnSecrets(savedPlan(run))

	w, waiting := findWaiting(run.Waiting, label, visit)
	if visit == 0 {
		visit = w.Visit
		if !waiting {
			visit = lastAnswered(saved.Recordings(), label)
		}
	}
	prev, answered := steps.FindAnswer(saved.Recordings(), label, visit)
	if !waiting && !answered {
		return fail(exitUsage, "step %s is not waiting for an answer%s", *stepFlag, waitingList(run.Waiting))
	}

	var answer map[string]any
	var form *steps.Form
	if waiting {
		if form, err = steps.ParseForm(w.Form); err != nil {
			return fail(exitFailed, "step %s: the saved form: %v", label, err)
		}
	}
	switch {
	case *jsonFlag != "":
		dec := json.NewDecoder(strings.NewReader(*jsonFlag))
		dec.UseNumber()
		if err := dec.Decode(&answer); err != nil || answer == nil {
			return fail(exitUsage, "--json: want a JSON object of the form's fields: %v", orNull(err))
		}
	case len(sets) > 0:
		answer = map[string]any{}
		for _, s := range sets {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return fail(exitUsage, "--set %q: want FIELD=VALUE", s)
			}
			if form == nil {
				answer[k] = v
				continue
			}
			if answer[k], err = form.Parse(k, v); err != nil {
				return fail(exitUsage, "step %s: %v", label, err)
			}
		}
	case waiting && isTerminal(stdin):
		if answer, err = ask(form, w, stdin, stderr); err != nil {
			return fail(exitUsage, "%v", err)
		}
	default:
		return usageErr(stderr, fs, "give the answer with --json '{...}' or --set FIELD=VALUE")
	}
	if form != nil {
		if answer, err = form.Check(answer); err != nil {
			return fail(exitUsage, "step %s: %v", name(label, visit), err)
		}
	}
	if answered {
		if !sameJSON(prev.Answer, answer) {
			return fail(exitFailed, "conflict: step %s was already answered with %s%s; a different answer is refused",
				name(label, visit), mustJSON(prev.Answer), byText(prev.By))
		}
		fmt.Fprintf(stdout, "step %s was already answered with this answer\n", name(label, visit))
	} else {
		resp, _ := json.Marshal(steps.InputAnswer{Answer: answer, By: *by})
		b, err := board.OpenAppend(path, board.Options{Redact: g.mask.String})
		if err != nil {
			return fail(exitFailed, "%v", err)
		}
		err = b.AddRecording(board.Recording{Label: label, Visit: visit, Kind: steps.KindInput, Agent: *by, Response: resp})
		if cerr := b.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fail(exitFailed, "%v", err)
		}
		fmt.Fprintf(stdout, "answered %s\n", name(label, visit))
	}
	if !*resume {
		if run.Status == board.StatusWaiting {
			fmt.Fprintf(stdout, "next:  runner resume %s\n", engine.ShellQuote(path))
		}
		return exitOK
	}
	lock.Unlock()
	return cmdResume(append(globalArgs(g), path), stdin, stdout, stderr)
}

// globalArgs gives the global flags on to another command.
func globalArgs(g *globals) []string {
	var a []string
	if g.logFormat != "" {
		a = append(a, "--log-format", g.logFormat)
	}
	if g.logLevel != "" {
		a = append(a, "--log-level", g.logLevel)
	}
	if g.quiet {
		a = append(a, "-q")
	}
	return a
}

func splitVisit(s string) (string, int, error) {
	label, v, ok := strings.Cut(s, "#")
	if !ok {
		return label, 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("%q: the visit after # must be a number from 1", s)
	}
	return label, n, nil
}

func findWaiting(ws []board.WaitingInput, label string, visit int) (board.WaitingInput, bool) {
	for _, w := range ws {
		if w.Label == label && (visit == 0 || w.Visit == visit) {
			return w, true
		}
	}
	return board.WaitingInput{}, false
}

func lastAnswered(recs []board.Recording, label string) int {
	v := 0
	for _, r := range recs {
		if r.Kind == steps.KindInput && r.Label == label && r.Visit > v {
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
		s = append(s, name(w.Label, w.Visit))
	}
	return " (it waits for: " + strings.Join(s, ", ") + ")"
}

// ask reads the answer field by field on a terminal.
func ask(form *steps.Form, w board.WaitingInput, stdin io.Reader, stderr io.Writer) (map[string]any, error) {
	fmt.Fprintf(stderr, "%s asks: %s\n", name(w.Label, w.Visit), strings.TrimSpace(w.Prompt))
	in := bufio.NewScanner(stdin)
	answer := map[string]any{}
	required := map[string]bool{}
	for _, r := range form.Required {
		required[r] = true
	}
	for _, f := range form.Fields {
		for {
			hint := f.Type
			if len(f.Enum) > 0 {
				hint = "one of " + mustJSON(f.Enum)
			}
			opt := ""
			if !required[f.Name] {
				opt = ", empty to skip"
			}
			fmt.Fprintf(stderr, "%s (%s%s): ", f.Name, hint, opt)
			if !in.Scan() {
				return nil, errors.New("no answer: standard input ended")
			}
			text := strings.TrimSpace(in.Text())
			if text == "" && !required[f.Name] {
				break
			}
			v, err := form.Parse(f.Name, text)
			if err != nil {
				fmt.Fprintf(stderr, "  %v\n", err)
				continue
			}
			answer[f.Name] = v
			break
		}
	}
	return answer, nil
}

func sameJSON(a, b map[string]any) bool {
	return bytes.Equal([]byte(mustJSON(a)), []byte(mustJSON(b)))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func byText(by string) string {
	if by == "" {
		return ""
	}
	return " by " + by
}

func orNull(err error) any {
	if err == nil {
		return "got null"
	}
	return err
}

// answerCommand is the line that answers a waiting input, with an
// example answer made from its form.
func answerCommand(quotedPath string, w board.WaitingInput) string {
	example := "{}"
	if form, err := steps.ParseForm(w.Form); err == nil {
		var b strings.Builder
		b.WriteByte('{')
		for i, f := range form.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			var v any
			switch {
			case len(f.Enum) > 0:
				v = f.Enum[0]
			case f.Type == "boolean":
				v = true
			case f.Type == "number" || f.Type == "integer":
				v = 0
			default:
				v = "..."
			}
			fmt.Fprintf(&b, "%s: %s", mustJSON(f.Name), mustJSON(v))
		}
		b.WriteByte('}')
		example = b.String()
	}
	return fmt.Sprintf("runner answer %s --step %s --json %s", quotedPath, name(w.Label, w.Visit), engine.ShellQuote(example))
}
