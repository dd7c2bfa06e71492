package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// Command and test steps with sandbox: run confined, and their results
// record how: writes outside fail while the workdir takes them, a timeout
// still ends the step, a background process ends with it.
func TestSandboxedSteps(t *testing.T) {
	outside := t.TempDir()
	work := t.TempDir()
	plan := strings.ReplaceAll(`version: 1
steps:
  - label: write
    type: command
    sandbox: strict
    run: |
      echo in > inside.txt
      echo out > OUT/f 2>/dev/null || echo refused
  - label: slow
    type: command
    sandbox: strict
    timeout: 1s
    run: sleep 30
    continue_on_error: true
  - label: bg
    type: command
    sandbox: {mode: optional}
    run: sleep 3171 >/dev/null 2>&1 & echo started
  - label: suite
    type: test
    framework: generic
    command: 'echo pass > inside2.txt && ! touch OUT/g 2>/dev/null'
    sandbox: {network: true, write: [extra]}
`, "OUT", outside)
	os.Mkdir(filepath.Join(work, "extra"), 0o755)
	// Open to all, so the refusal is the sandbox's even where its root
	// is an unprivileged host id (runner as root).
	os.Chmod(filepath.Dir(outside), 0o755)
	os.Chmod(outside, 0o777)
	b, err := runPlan(t, work, plan, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	res, _, _ := saved(t, b, "write")
	if res["stdout"] != "refused\n" {
		t.Errorf("write: stdout %q, want refused", res["stdout"])
	}
	if _, err := os.Stat(filepath.Join(work, "inside.txt")); err != nil {
		t.Errorf("the workdir took no write: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("a sandboxed step wrote outside: %v", ents)
	}
	sb, _ := res["sandbox"].(map[string]any)
	if sb["mode"] != "strict" || sb["active"] != true || sb["network"] != false {
		t.Errorf("write: result's sandbox = %v", sb)
	}
	res, status, _ := saved(t, b, "slow")
	if res["timed_out"] != true || status != "failed" {
		t.Errorf("slow: timed_out %v, status %s", res["timed_out"], status)
	}
	if pids := processesWithArgs("sleep", "3171"); len(pids) > 0 {
		t.Errorf("bg: its background sleep outlived the step: %v", pids)
	}
	res, status, errText := saved(t, b, "suite")
	sb, _ = res["sandbox"].(map[string]any)
	if status != "succeeded" || res["passed"] != true || sb["network"] != true || sb["active"] != true {
		t.Errorf("suite: %s %s, result %v", status, errText, res)
	}
	// The result keeps the plan's paths as written, not the host's, so a
	// replay in another directory records the same sandbox.
	if w, _ := sb["write"].([]any); len(w) != 1 || w[0] != "extra" {
		t.Errorf("suite: write paths %v, want the plan's [extra] as written", sb["write"])
	}
}

// A write path the sandbox makes in the workdir is never made through a
// link an earlier step planted there: the step is refused naming the
// link, and nothing is made or opened where it points.
func TestSandboxWriteNotThroughPlantedLink(t *testing.T) {
	outside := t.TempDir()
	work := t.TempDir()
	plan := strings.ReplaceAll(`version: 1
steps:
  - label: plant
    type: command
    sandbox: strict
    run: ln -s OUT out && ln -s OUT/made whole
  - label: nested
    type: command
    sandbox: {write: [out/cache]}
    run: echo x > out/cache/f
    continue_on_error: true
  - label: whole
    type: command
    sandbox: {write: [whole]}
    run: echo x > whole/f
    continue_on_error: true
`, "OUT", outside)
	b, err := runPlan(t, work, plan, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ label, link string }{{"nested", "out"}, {"whole", "whole"}} {
		_, status, errText := saved(t, b, tc.label)
		want := filepath.Join(work, tc.link) + ": found a symbolic link to " + outside
		if status != "failed" || !strings.Contains(errText, want) {
			t.Errorf("%s: %s %q, want a failure naming %q", tc.label, status, errText, want)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("made through the planted link: %v", ents)
	}
}

// Bad sandbox fields are load errors at their line, saying what is wrong.
func TestSandboxFieldErrors(t *testing.T) {
	for _, tc := range []struct{ step, want string }{
		{`sandbox: strcit`, `sandbox: "strcit" is not a sandbox mode (strict or optional) (did you mean "strict"?)`},
		{`sandbox: {mode: loose}`, `sandbox.mode: "loose" is not a sandbox mode`},
		{`sandbox: {netwrk: true}`, `netwrk`},
		{`sandbox: {network: maybe}`, `sandbox.network`},
		{`sandbox: {caches: [pip]}`, `sandbox.caches: unknown cache "pip" (known: go; give others' paths in sandbox.write)`},
		{`sandbox: {write: ["${{ vars.x }}"]}`, `is not a path (absolute, ~/..., or relative to the workdir; no ${{ }})`},
		{`sandbox: {read: {a: b}}`, `sandbox.read`},
		{"sandbox: strict\n    keep_background: true", `keep_background cannot be used with sandbox`},
	} {
		for _, typ := range []string{"command\n    run: 'true'", "test\n    framework: generic\n    command: 'true'"} {
			if strings.Contains(tc.step, "keep_background") && strings.HasPrefix(typ, "test") {
				continue
			}
			src := "version: 1\nsteps:\n  - label: s\n    type: " + typ + "\n    " + tc.step + "\n"
			got := llmCompileErr(t, src)
			if !strings.Contains(got, tc.want) || !strings.Contains(got, "plan.yaml:") {
				t.Errorf("%s (%s):\n got %s\nwant %s", tc.step, strings.SplitN(typ, "\n", 2)[0], got, tc.want)
			}
		}
	}
}

// processesWithArgs lists the pids whose command line is exactly args.
func processesWithArgs(args ...string) []string {
	want := strings.Join(args, "\x00") + "\x00"
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && string(b) == want && pidRunningStr(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

func pidRunningStr(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}
