package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/planrunner/runner/internal/bigjson"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

const answerUsage = "answer BLACKBOARD --step LABEL[#VISIT] (--json '{...}' | --set FIELD=VALUE...) [--by NAME] [--resume]"

// cmdAnswer records a person's answer to an input step a run waits at.
// The answer is checked against the step's form, recorded on the board
// (so a replay takes it from there), and idempotent: the same answer again
// succeeds, a different one is refused as a conflict.
func cmdAnswer(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("answer", stdout, stderr)
	stepFlag := fs.String("step", "", "the input step to answer: LABEL, or LABEL#VISIT")
	jsonFlag := fs.String("json", "", "the answer, a JSON object of the form's fields")
	var sets stringList
	fs.Var(&sets, "set", "one field of the answer, FIELD=VALUE, read as the form's type says (repeatable)")
	by := fs.String("by", whoAnswers(), "who answers (recorded with the answer; default: your login name)")
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
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "runner answer: "+format+"\n", a...)
		return code
	}
	if pos[0], err = runs.Resolve(pos[0], "."); err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	q, err := runs.OpenQuestion(pos[0], label, visit, g.mask, g.mask.Writer(stderr))
	if err != nil {
		return fail(answerCode(err), "%v", err)
	}
	defer q.Close()
	if u, err := user.Current(); err == nil {
		q.Identity = u.Username // not $USER: anyone can set that
	}
	if q.Waiting {
		if err := steps.MayAnswer(q.Input, q.Identity); err != nil {
			return fail(exitFailed, "%v", err)
		}
	}
	answer, code := readAnswer(q.Form, q.Input, *jsonFlag, sets, stdin, stderr)
	if code != exitOK {
		return code
	}
	a, err := q.Answer(answer, *by)
	if err != nil {
		return fail(answerCode(err), "%v", err)
	}
	path := q.Path
	switch {
	case a.Already:
		fmt.Fprintf(stdout, "step %s was already answered with this answer\n", steps.VisitName(a.Label, a.Visit))
	case a.Where == runs.OnTemporal:
		fmt.Fprintf(stdout, "answered %s; the run on Temporal goes on\n", steps.VisitName(a.Label, a.Visit))
	case a.Where == runs.OnLiveRun:
		fmt.Fprintf(stdout, "answered %s; the run still runs: once it stops, resume it with\nnext:  runner resume %s\n",
			steps.VisitName(a.Label, a.Visit), engine.ShellQuote(path))
	default:
		fmt.Fprintf(stdout, "answered %s\n", steps.VisitName(a.Label, a.Visit))
	}
	if a.Where != runs.OnFile {
		return exitOK
	}
	if !*resume {
		if q.Run.Status == board.StatusWaiting {
			fmt.Fprintf(stdout, "next:  runner resume %s\n", engine.ShellQuote(path))
		}
		return exitOK
	}
	q.Close()
	return cmdResume(append(globalArgs(g), path), stdin, stdout, stderr)
}

// answerCode is the exit code of an answer refused: 2 for a mistake in
// the command, 1 for a conflict with the recorded answer or a run that
// cannot be read.
func answerCode(err error) int {
	if runs.IsUsage(err) {
		return exitUsage
	}
	return exitFailed
}

// readAnswer takes the answer from --json, from --set (each value read as
// the form's field type says), or field by field on a terminal.
func readAnswer(form *steps.Form, w board.WaitingInput, jsonText string, sets []string, stdin io.Reader, stderr io.Writer) (map[string]any, int) {
	fail := func(format string, a ...any) (map[string]any, int) {
		fmt.Fprintf(stderr, "runner answer: "+format+"\n", a...)
		return nil, exitUsage
	}
	switch {
	case jsonText != "":
		var answer map[string]any
		dec := json.NewDecoder(strings.NewReader(jsonText))
		dec.UseNumber()
		if err := dec.Decode(&answer); err != nil || answer == nil {
			return fail("--json: want a JSON object of the form's fields: %v", orNull(bigjson.Explain([]byte(jsonText), err)))
		}
		return answer, exitOK
	case len(sets) > 0:
		answer := map[string]any{}
		var bad steps.FormErrors // every field that does not fit, told at once
		for _, s := range sets {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return fail("--set %q: want FIELD=VALUE", s)
			}
			if form == nil {
				answer[k] = v
				continue
			}
			x, err := form.Parse(k, v)
			if err != nil {
				bad = append(bad, err)
				continue
			}
			answer[k] = x
		}
		if len(bad) > 0 {
			for _, r := range form.Required {
				if _, ok := answer[r]; !ok && !slices.Contains(setNames(sets), r) {
					bad = append(bad, fmt.Errorf("field %q is required", r))
				}
			}
			return fail("step %s: %v", w.Label, bad)
		}
		return answer, exitOK
	case form != nil && isTerminal(stdin):
		answer, err := ask(form, w, stdin, stderr)
		if err != nil {
			return fail("%v", err)
		}
		return answer, exitOK
	}
	return fail("give the answer with --json '{...}' or --set FIELD=VALUE")
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

// ask reads the answer field by field on a terminal.
func ask(form *steps.Form, w board.WaitingInput, stdin io.Reader, stderr io.Writer) (map[string]any, error) {
	fmt.Fprintf(stderr, "%s asks: %s\n", name(w.Label, w.Visit), strings.TrimSpace(w.Prompt))
	in := bufio.NewScanner(stdin)
	limit := readlimit.Limit(readlimit.Answer)
	in.Buffer(make([]byte, 0, 4096), int(limit))
	answer := map[string]any{}
	required := map[string]bool{}
	for _, r := range form.Required {
		required[r] = true
	}
	for _, f := range form.Fields {
		if d := strings.TrimSpace(f.Description); d != "" {
			fmt.Fprintf(stderr, "  %s: %s\n", f.Name, d)
		}
		for {
			hint := f.Type
			if f.Type == "boolean" {
				hint = "yes or no"
			}
			if len(f.Enum) > 0 {
				hint = "one of " + mustJSON(f.Enum)
			}
			opt := ""
			if !required[f.Name] {
				opt = ", empty to skip"
			}
			fmt.Fprintf(stderr, "%s (%s%s): ", f.Name, hint, opt)
			if !in.Scan() {
				if errors.Is(in.Err(), bufio.ErrTooLong) {
					return nil, &readlimit.TooLargeError{Name: "a line on standard input", Limit: limit}
				}
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

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func orNull(err error) any {
	if err == nil {
		return "got null"
	}
	return err
}

// whoAnswers is the login name an answer is recorded under by default:
// $USER, else $LOGNAME, else the user database's name for this uid.
func whoAnswers() string {
	for _, v := range []string{"USER", "LOGNAME"} {
		if n := os.Getenv(v); n != "" {
			return n
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// setNames are the fields --set FIELD=VALUE flags name.
func setNames(sets []string) []string {
	var names []string
	for _, s := range sets {
		k, _, _ := strings.Cut(s, "=")
		names = append(names, k)
	}
	return names
}
