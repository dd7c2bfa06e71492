package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStartupInitIsSmall: what runner's own packages do before main
// (package variables and init functions), which every command pays
// however little it does, allocates under 128 KB. Templates and regular
// expressions a command may never use are built on first use: the
// serve package's pages and the diff applier's markers took 230 KB, 3,200
// allocations and about a quarter of `runner version`'s CPU
// at start-up. Allocations, not time: the runtime reports them exactly.
func TestStartupInitIsSmall(t *testing.T) {
	cmd := exec.Command(binary, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("runner version: %v\n%s", err, out)
	}
	total, lines := 0, 0
	var heavy []string
	for _, l := range strings.Split(string(out), "\n") {
		// init github.com/planrunner/runner/serve @10 ms, 0.87 ms clock, 162616 bytes, 2548 allocs
		f := strings.Fields(l)
		if len(f) < 10 || f[0] != "init" || (f[1] != "main" && !strings.HasPrefix(f[1], "github.com/planrunner/runner")) {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil || f[8] != "bytes," {
			t.Fatalf("unexpected inittrace line %q", l)
		}
		total += n
		lines++
		if n > 16<<10 {
			heavy = append(heavy, l)
		}
	}
	if lines < 5 {
		t.Fatalf("found %d init lines of runner's packages in:\n%s", lines, out)
	}
	if total > 128<<10 {
		t.Errorf("runner's packages allocate %d bytes before main; the heaviest:\n%s", total, strings.Join(heavy, "\n"))
	}
}

// A plan run from another directory reads the workdir's files, as
// docs/plans.md says: started elsewhere without --workdir it says once
// which workdir it uses and how to change it; with --workdir it gets the
// same result wherever it is started from.
func TestWorkdirFromAnyDirectory(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"plan", "project", "elsewhere"} {
		os.Mkdir(filepath.Join(root, d), 0o755)
	}
	plan := filepath.Join(root, "plan", "plan.yaml")
	os.WriteFile(plan, []byte("version: 1\nname: count\nsteps:\n  - {label: count, type: command, run: 'echo ${{ len(files(\"*.txt\")) }} files'}\n"), 0o644)
	os.WriteFile(filepath.Join(root, "project", "a.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(root, "project", "b.txt"), nil, 0o644)
	project := filepath.Join(root, "project")
	for _, tc := range []struct {
		name, cwd string
		args      []string
		output    string
		note      bool
	}{
		{"from the project", project, nil, "2 files", true}, // right, but not where the plan is: said
		{"from elsewhere", filepath.Join(root, "elsewhere"), nil, "0 files", true},
		{"from elsewhere with --workdir", filepath.Join(root, "elsewhere"), []string{"--workdir", project}, "2 files", false},
		{"from the plan's directory with --workdir", filepath.Join(root, "plan"), []string{"--workdir", "../project"}, "2 files", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.cwd, append([]string{"run", plan, "--log-format", "console"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "output of count:\n  "+tc.output+"\n") {
				t.Errorf("want output %q:\n%s", tc.output, r.stderr)
			}
			note := "workdir: " + tc.cwd + " (dir:, diff_file:, files() and read_file() are relative to it, not to the plan's directory " +
				filepath.Join(root, "plan") + "; --workdir DIR to change it)"
			if got := strings.Count(r.stderr, note); got != map[bool]int{true: 1, false: 0}[tc.note] {
				t.Errorf("the workdir note is said %d times, want it: %v\n%s", got, tc.note, r.stderr)
			}
			// A pattern that matched nothing is said live and in the
			// report; the board is unchanged, so an offline replay agrees.
			empty := tc.output == "0 files"
			const warn = `files("*.txt") matched nothing in the workdir`
			if got := strings.Contains(r.stderr, warn); got != empty {
				t.Errorf("the run says %q: %v, want %v\n%s", warn, got, empty, r.stderr)
			}
			bb := blackboardPath(t, r.stdout)
			html := filepath.Join(t.TempDir(), "report.html")
			if rr := runCLI(t, tc.cwd, "report", bb, "-o", html); rr.code != 0 {
				t.Fatalf("report: exit %d\n%s", rr.code, rr.stderr)
			}
			page, _ := os.ReadFile(html)
			if got := strings.Contains(string(page), `files(<code>*.txt</code>) matched nothing in the workdir`); got != empty {
				t.Errorf("the report says the pattern matched nothing: %v, want %v", got, empty)
			}
			if rr := runCLI(t, tc.cwd, "replay", bb, "--offline", "-q"); rr.code != 0 {
				t.Errorf("offline replay: exit %d\n%s", rr.code, rr.stderr)
			}
		})
	}
}
