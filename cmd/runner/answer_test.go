package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	stepspkg "github.com/planrunner/runner/internal/steps"
)

// loadRun reads a saved run's header and step records.
func loadRun(t *testing.T, path string) (board.Run, []board.StepRecord) {
	t.Helper()
	b, err := board.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return b.Run(), b.Steps()
}

func stepResult(t *testing.T, steps []board.StepRecord, label string) map[string]any {
	t.Helper()
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Label == label {
			var m map[string]any
			if err := json.Unmarshal(steps[i].Result, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no record of step %s", label)
	return nil
}

// An input between a generated diff and its apply: the run waits (status,
// exit 4, the command to type), a wrong answer is refused naming the
// field, a right one is recorded once (the same again is fine, another is
// a conflict), resume goes to the end, and the saved run replays offline.
func TestInputWaitsForAnAnswer(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	r := runCLI(t, wd, "run", testdata("review.yaml"), "--out", bb, "--log-format", "console")
	if r.code != 4 {
		t.Fatalf("run: exit %d, want 4 (waiting)\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"review asks: Apply this diff?", "runner answer " + bb + " --step review --json", "runner resume " + bb} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the waiting run's output lacks %q:\n%s", want, r.stderr)
		}
	}
	run, _ := loadRun(t, bb)
	if run.Status != board.StatusWaiting || len(run.Waiting) != 1 || run.Waiting[0].Label != "review" {
		t.Fatalf("saved run: status %q, waiting %+v; want waiting at review", run.Status, run.Waiting)
	}
	if !strings.Contains(run.Waiting[0].Prompt, "+hello, world") {
		t.Errorf("the saved prompt is not rendered: %q", run.Waiting[0].Prompt)
	}
	if got, _ := os.ReadFile(filepath.Join(wd, "greet.txt")); string(got) != "hello\n" {
		t.Fatalf("the diff was applied before anyone answered: %q", got)
	}

	refused := []struct{ answer, field string }{
		{`{"approve":"yes"}`, `field "approve"`},
		{`{"risk":"low"}`, `field "approve" is required`},
		{`{"approve":true,"risk":"medium"}`, `field "risk"`},
		{`{"approve":true,"colour":"red"}`, `field "colour" is not in the form`},
		{`{"approve":true,"reviewer":7}`, `field "reviewer": want a string`},
		{`[true]`, `--json: want a JSON object of the form's fields: line 1, column 1: a list, want an object`},
		{`{"approve": tru}`, `--json: want a JSON object of the form's fields: line 1, column 16: invalid character '}'`},
	}
	for _, c := range refused {
		r := runCLI(t, wd, "answer", bb, "--step", "review", "--json", c.answer)
		if r.code != 2 || !strings.Contains(r.stderr, c.field) {
			t.Errorf("answer %s: exit %d, stderr %q; want exit 2 naming %s", c.answer, r.code, r.stderr, c.field)
		}
	}
	if r := runCLI(t, wd, "answer", bb, "--step", "nosuch", "--json", `{}`); r.code != 2 || !strings.Contains(r.stderr, "waits for: review") {
		t.Errorf("answering a step that does not wait: exit %d, %q", r.code, r.stderr)
	}

	if r := runCLI(t, wd, "answer", bb, "--step", "review", "--set", "approve=true", "--set", "risk=low", "--by", "ana"); r.code != 0 {
		t.Fatalf("a valid answer: exit %d\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "answer", bb, "--step", "review", "--json", `{"risk":"low","approve":true}`); r.code != 0 || !strings.Contains(r.stdout, "already answered") {
		t.Errorf("the same answer again: exit %d, %q; want 0, already answered", r.code, r.stdout)
	}
	if r := runCLI(t, wd, "answer", bb, "--step", "review", "--json", `{"approve":false}`); r.code != 1 || !strings.Contains(r.stderr, "conflict") {
		t.Errorf("a different answer: exit %d, %q; want 1, conflict", r.code, r.stderr)
	}

	if r := runCLI(t, wd, "resume", bb, "-q"); r.code != 0 {
		t.Fatalf("resume after the answer: exit %d\n%s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(wd, "greet.txt")); string(got) != "hello, world\n" {
		t.Errorf("after the approved resume greet.txt = %q", got)
	}
	run, steps := loadRun(t, bb)
	if run.Status != board.StatusSucceeded || len(run.Waiting) != 0 {
		t.Errorf("resumed run: status %q, waiting %+v", run.Status, run.Waiting)
	}
	res := stepResult(t, steps, "review")
	if res["by"] != "ana" || res["default"] != false {
		t.Errorf("review's result %v: want by ana, not the default", res)
	}
	// What ana was shown is kept with her answer: the rendered question
	// and the form's fields.
	saved, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	ans, ok := stepspkg.FindAnswer(saved.Recordings(), "review", 1)
	if !ok || ans.Asked == nil || !strings.Contains(ans.Asked.Prompt, "+hello, world") || len(ans.Asked.Fields) == 0 ||
		ans.Asked.Fields[0].Name != "approve" || !ans.Asked.Fields[0].Required {
		t.Errorf("the recorded answer keeps %+v of what was asked, want the rendered prompt and the form's fields", ans.Asked)
	}
	if r := runCLI(t, wd, "replay", bb, "--offline", "-q"); r.code != 0 {
		t.Errorf("offline replay of the answered run: exit %d\n%s", r.code, r.stderr)
	}
}

// An input nobody answers before its timeout takes its default on resume,
// says so (default, timed_out), and replays exactly.
func TestInputTimeoutTakesDefault(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	if r := runCLI(t, wd, "run", testdata("review-timeout.yaml"), "--out", bb, "-q"); r.code != 4 {
		t.Fatalf("run: exit %d, want 4\n%s", r.code, r.stderr)
	}
	time.Sleep(400 * time.Millisecond)
	r := runCLI(t, wd, "resume", bb, "--log-format", "console")
	if r.code != 0 || !strings.Contains(r.stderr, "deploying to staging") {
		t.Fatalf("resume after the timeout: exit %d\n%s", r.code, r.stderr)
	}
	_, steps := loadRun(t, bb)
	res := stepResult(t, steps, "review")
	if res["default"] != true || res["timed_out"] != true {
		t.Errorf("review's result %v: want default and timed_out", res)
	}
	if r := runCLI(t, wd, "replay", bb, "--offline", "-q"); r.code != 0 {
		t.Errorf("offline replay: exit %d\n%s", r.code, r.stderr)
	}
}

// Two inputs in one parallel group both wait while their sibling runs;
// each is answered on its own, and the run goes on only once both are.
func TestParallelInputsAnsweredOneByOne(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	if r := runCLI(t, wd, "run", testdata("review-parallel.yaml"), "--out", bb, "-q"); r.code != 4 {
		t.Fatalf("run: exit %d, want 4\n%s", r.code, r.stderr)
	}
	run, steps := loadRun(t, bb)
	if len(run.Waiting) != 2 {
		t.Fatalf("waiting %+v, want legal and budget", run.Waiting)
	}
	prepDone := false
	for _, s := range steps {
		prepDone = prepDone || s.Label == "prep" && s.Status == board.StatusSucceeded
	}
	if !prepDone {
		t.Errorf("the sibling command did not finish while the inputs waited: %+v", steps)
	}
	if r := runCLI(t, wd, "answer", bb, "--step", "budget", "--set", "usd=12.5"); r.code != 2 || !strings.Contains(r.stderr, "integer") {
		t.Errorf("usd=12.5: exit %d %q, want 2 naming an integer", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "answer", bb, "--step", "budget", "--set", "usd=12", "--resume", "-q"); r.code != 4 {
		t.Fatalf("after one answer the run must wait again: exit %d\n%s", r.code, r.stderr)
	}
	if run, _ := loadRun(t, bb); len(run.Waiting) != 1 || run.Waiting[0].Label != "legal" {
		t.Fatalf("waiting %+v, want legal only", run.Waiting)
	}
	r := runCLI(t, wd, "answer", bb, "--step", "legal", "--json", `{"ok":true}`, "--resume", "--log-format", "console")
	if r.code != 0 || !strings.Contains(r.stderr, "legal=true usd=12") {
		t.Fatalf("after both answers: exit %d\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "replay", bb, "--offline", "-q"); r.code != 0 {
		t.Errorf("offline replay: exit %d\n%s", r.code, r.stderr)
	}
}

// Bad input steps are plan errors at their line, before anything runs.
func TestInputFormErrors(t *testing.T) {
	cases := []struct{ step, want string }{
		{`{label: q, type: input, prompt: p, form: {properties: {a: {type: object}}}}`, "a form is flat"},
		{`{label: q, type: input, prompt: p, form: {properties: {}}}`, "at least one field"},
		{`{label: q, type: input, prompt: p, form: {properties: {a: {type: string}}, required: [b]}}`, `required field "b"`},
		{`{label: q, type: input, prompt: p, form: {properties: {a: {type: string, enum: [1]}}}}`, "enum value 1"},
		{`{label: q, type: input, prompt: p, form: {properties: {a: {type: string}}}, default: {a: x}}`, "give the step a timeout"},
		{`{label: q, type: input, prompt: p, timeout: 1m, form: {properties: {a: {type: integer}}}, default: {a: x}}`, `field "a": want an integer`},
		{`{label: q, type: input, form: {properties: {a: {type: string}}}}`, `missing required field "prompt"`},
	}
	for _, c := range cases {
		dir := t.TempDir()
		p := filepath.Join(dir, "plan.yaml")
		os.WriteFile(p, []byte("version: 1\nname: t\nsteps:\n  - "+c.step+"\n"), 0o644)
		r := runCLI(t, dir, "validate", p)
		if r.code != 2 || !strings.Contains(r.stderr+r.stdout, c.want) || !strings.Contains(r.stderr+r.stdout, "plan.yaml:4:") {
			t.Errorf("%s: exit %d, output %q; want exit 2 at line 4 saying %q", c.step, r.code, r.stderr+r.stdout, c.want)
		}
	}
}

// An input waits while its sibling still runs: the run holds its lock,
// and `runner answer` reaches it through its socket (checked against the
// form there too). The run then stops as waiting, and a resume takes the
// answer without asking again.
func TestAnswerWhileTheRunStillRuns(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	cmd := exec.Command(binary, "run", testdata("review-live.yaml"), "--out", bb, "-q")
	cmd.Dir = wd
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if run, err := board.Load(bb); err == nil && len(run.Run().Waiting) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the input never waited:\n%s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := runCLI(t, wd, "answer", bb, "--step", "legal", "--set", "ok=maybe"); r.code != 2 || !strings.Contains(r.stderr, `"ok"`) {
		t.Errorf("a bad answer to the live run: exit %d %q; want 2 naming the field", r.code, r.stderr)
	}
	r := runCLI(t, wd, "answer", bb, "--step", "legal", "--set", "ok=true")
	if r.code != 0 || !strings.Contains(r.stdout, "answered legal; the run still runs") || !strings.Contains(r.stdout, "runner resume") {
		t.Fatalf("answer to the live run: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, wd, "answer", bb, "--step", "legal", "--set", "ok=false"); r.code != 1 || !strings.Contains(r.stderr, "conflict") {
		t.Errorf("a different answer: exit %d %q; want a conflict", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(wd, "go"), nil, 0o644)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("the run: %v, want exit 4 (waiting)\n%s", err, errb.String())
	}
	r = runCLI(t, wd, "resume", bb, "--log-format", "console")
	if r.code != 0 || !strings.Contains(r.stderr, "legal=true") {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "replay", bb, "--offline", "-q"); r.code != 0 {
		t.Errorf("offline replay: exit %d\n%s", r.code, r.stderr)
	}
}

// A person answers a boolean as people do (yes, no, y, n in any case),
// and without $USER the answer is still recorded under the login name.
func TestAnswerTakesYesAndNoAndALoginName(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want bool
	}{{"yes", true}, {"Y", true}, {"no", false}, {"N", false}, {"true", true}} {
		wd := t.TempDir()
		bb := filepath.Join(wd, "bb.json")
		if r := runCLI(t, wd, "run", testdata("review.yaml"), "--out", bb, "-q"); r.code != 4 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
		cmd := exec.Command(binary, "answer", bb, "--step", "review", "--set", "approve="+c.text)
		cmd.Dir = wd
		cmd.Env = withoutEnv(os.Environ(), "USER", "LOGNAME")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("answer approve=%s: %v\n%s", c.text, err, out)
		}
		b, err := board.Load(bb)
		if err != nil {
			t.Fatal(err)
		}
		var got []board.Answer
		for _, rec := range b.Recordings() {
			var a board.Answer
			if rec.Kind == "input" && rec.Label == "review" && json.Unmarshal(rec.Response, &a) == nil {
				got = append(got, a)
			}
		}
		if len(got) != 1 || got[0].Answer["approve"] != c.want || got[0].By != me.Username {
			t.Errorf("approve=%s: recorded %+v; want approve %v by %q", c.text, got, c.want, me.Username)
		}
	}
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	runCLI(t, wd, "run", testdata("review.yaml"), "--out", bb, "-q")
	if r := runCLI(t, wd, "answer", bb, "--step", "review", "--set", "approve=maybe"); r.code != 2 || !strings.Contains(r.stderr, "yes, no") {
		t.Errorf("approve=maybe: exit %d %q; want 2 saying what is taken", r.code, r.stderr)
	}
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// An answer's every bad field is told at once, from --set and from --json,
// and nothing is recorded.
func TestAnswerTellsEveryBadField(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	if r := runCLI(t, wd, "run", testdata("validate/ask.yaml"), "--out", bb); r.code != 4 {
		t.Fatalf("run: exit %d, want 4\n%s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "age=x", "--set", "ok=maybe", "--set", "colour=red"},
			`runner answer: step ask: field "age": want an integer, got "x"; field "ok": want true or false (yes, no, y, n), got "maybe"; field "colour" is not in the form (it has name, age, ok); field "name" is required`},
		{[]string{"--json", `{"age": "x", "ok": "maybe", "colour": "red"}`},
			`runner answer: step ask: the answer does not fit the form: field "age": want an integer, got the string "x"; field "colour" is not in the form (it has name, age, ok); field "ok": want true or false, got the string "maybe"; field "name" is required`},
	} {
		r := runCLI(t, wd, append([]string{"answer", bb, "--step", "ask"}, tc.args...)...)
		if r.code != exitUsage || strings.TrimSpace(r.stderr) != tc.want {
			t.Errorf("%v: exit %d\n got: %s\nwant: %s", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if run, _ := loadRun(t, bb); len(run.Waiting) != 1 {
		t.Errorf("a refused answer changed the run: waiting %+v", run.Waiting)
	}
}
