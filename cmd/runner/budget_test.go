package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/budget"
)

// The worst case a dry run gives: loops by max_visits, for_each by a
// var's list, a for_each over a step's output unbounded.
func TestDryRunWorstCost(t *testing.T) {
	r := runCLI(t, filepath.Join("testdata", "cost"), "run", "plan.yaml", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	_, cost, ok := strings.Cut(r.stdout, "worst-case cost")
	if !ok {
		t.Fatalf("no worst-case cost:\n%s", r.stdout)
	}
	golden(t, "cost.dry-run.golden", "worst-case cost"+cost)
	v := runCLI(t, filepath.Join("testdata", "cost"), "validate", "--cost", "plan.yaml")
	if v.code != 0 || !strings.HasSuffix(v.stdout, cost) {
		t.Errorf("validate --cost: exit %d, not the dry run's cost:\n%s", v.code, v.stdout)
	}
}

// Two runs in separate processes, started together, cannot together
// cross a daily budget: each call holds its worst case in the shared
// ledger before it is sent.
func TestBudgetAcrossConcurrentRuns(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RUNNER_BUDGET_DIR", filepath.Join(dir, "ledger"))
	// Each call holds about 27 tokens at $0.01 a token and costs about 8.
	var plan strings.Builder
	plan.WriteString("version: 1\nname: spender\nbudgets:\n  limits:\n    - {plan: spender, period: day, max_cost_usd: 1}\n")
	plan.WriteString("agents:\n  bot: {provider: script, model: m, price: {input: 10000, output: 0}, responses: [")
	for i := range 12 {
		if i > 0 {
			plan.WriteString(", ")
		}
		plan.WriteString(`"ok"`)
	}
	plan.WriteString("]}\nsteps:\n")
	for i := range 12 {
		fmt.Fprintf(&plan, "  - {label: s%d, type: llm, agent: bot, prompt: \"say ok, number %02d\"}\n", i, i)
	}
	os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan.String()), 0o644)
	var wg sync.WaitGroup
	res := make([]result, 2)
	for i := range res {
		os.Mkdir(filepath.Join(dir, fmt.Sprint(i)), 0o755)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = runCLI(t, dir, "run", "plan.yaml", "--workdir", filepath.Join(dir, fmt.Sprint(i)))
		}()
	}
	wg.Wait()
	refused := 0
	for i, r := range res {
		if strings.Contains(r.stderr, "budget of plan spender per day $1.00 (plan.yaml:5): the next call") {
			refused++
		} else if r.code != 0 {
			t.Errorf("run %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	if refused == 0 {
		t.Errorf("no run was refused: 24 calls fit a $1.00 budget?\n%s\n%s", res[0].stderr, res[1].stderr)
	}
	now := time.Now().UTC()
	recs, err := budget.Open(filepath.Join(dir, "ledger")).Records(now.Add(-time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	spent, calls := 0.0, 0
	for _, e := range budget.Sum(recs, now) {
		if e.Pending {
			t.Errorf("a hold left after both runs ended: %+v", e)
		}
		spent += e.USD
		calls++
	}
	if spent > 1 || calls < 2 {
		t.Errorf("the two runs spent $%.4f in %d calls against $1.00", spent, calls)
	}
	c := runCLI(t, dir, "cost", "--dir", filepath.Join(dir, "0"), "--json")
	if c.code != 0 || !strings.Contains(c.stdout, `"key": "spender"`) {
		t.Errorf("runner cost: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
}

// A budget in the user's config that is wrong is reported at its line
// and field, and the run does not start.
func TestConfigBudgetErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("budgets:\n  limits:\n    - {agent: coder, period: week, max_cost_usd: 5}\n"), 0o644)
	t.Setenv("RUNNER_CONFIG", cfg)
	os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte("version: 1\nsteps:\n  - {label: a, type: command, run: 'true'}\n"), 0o644)
	r := runCLI(t, dir, "run", "plan.yaml")
	want := cfg + `:3:30: budgets.limits[0].period: "week" is not day or month (calendar days and months in UTC)`
	if r.code != exitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, want %d and %q:\n%s", r.code, exitUsage, want, r.stderr)
	}
}

// A plan with budgets does not start on Temporal.
func TestBudgetsRefusedOnTemporal(t *testing.T) {
	r := runCLI(t, filepath.Join("testdata", "cost"), "run", "plan.yaml", "--engine", "temporal", "--temporal", "127.0.0.1:1")
	if r.code != exitUsage || !strings.Contains(r.stderr, "budgets: is not supported on Temporal") {
		t.Errorf("exit %d:\n%s", r.code, r.stderr)
	}
}

// Budgets in the user's config do not start a run on Temporal either:
// the run is refused, naming the config, rather than run without them.
func TestConfigBudgetsRefusedOnTemporal(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("budgets:\n  limits:\n    - {agent: coder, period: day, max_cost_usd: 5}\n"), 0o644)
	t.Setenv("RUNNER_CONFIG", cfg)
	os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte("version: 1\nsteps:\n  - {label: a, type: command, run: 'true'}\n"), 0o644)
	r := runCLI(t, dir, "run", "plan.yaml", "--engine", "temporal", "--temporal", "127.0.0.1:1")
	want := "the budgets: of your config " + cfg + " are not supported on Temporal"
	if r.code != exitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, want %d and %q:\n%s", r.code, exitUsage, want, r.stderr)
	}
}

// With on_exceed: ask, a call that would cross a budget makes the run
// wait at LABEL/budget-1; answered with a raise (by an amount or to a
// total), the resumed run sends it and finishes, and its offline replay
// asks and reads the same answer without the ledger or a person;
// answered stop, the step fails with the budget's error.
func TestBudgetAsk(t *testing.T) {
	cases := []struct {
		name, answer string
		code         int
		want         string // in the resume's stderr
	}{
		{"raise by", `{"raise_usd": 1}`, 0, ""},
		{"raise to", `{"total_usd": 2}`, 0, ""},
		{"stop", `{"stop": true}`, 1, "plan.yaml:6): the next call (agent bot, model m) could cost up to $0.25"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("RUNNER_BUDGET_DIR", filepath.Join(dir, "ledger"))
			t.Setenv("RUNNER_CONFIG", filepath.Join(dir, "no-config.yaml"))
			// Each call holds about $0.25 and costs about $0.05: the
			// third does not fit $0.30.
			plan := "version: 1\nname: spender\nbudgets:\n  on_exceed: ask\n  limits:\n    - {plan: spender, period: day, max_cost_usd: 0.3}\n" +
				"agents:\n  bot: {provider: script, model: m, price: {input: 10000, output: 0}, responses: [\"ok\", \"ok\", \"ok\"]}\n" +
				"steps:\n  - {label: s0, type: llm, agent: bot, prompt: \"say ok, number 00\"}\n" +
				"  - {label: s1, type: llm, agent: bot, prompt: \"say ok, number 01\"}\n" +
				"  - {label: s2, type: llm, agent: bot, prompt: \"say ok, number 02\"}\n"
			os.WriteFile(filepath.Join(dir, "plan.yaml"), []byte(plan), 0o644)
			bb := filepath.Join(dir, "bb.json")
			if r := runCLI(t, dir, "run", "plan.yaml", "--out", bb); r.code != 4 {
				t.Fatalf("run: exit %d, want 4 (waiting)\n%s", r.code, r.stderr)
			}
			run, _ := loadRun(t, bb)
			if len(run.Waiting) != 1 || run.Waiting[0].Label != "s2/budget-1" ||
				!strings.Contains(run.Waiting[0].Prompt, "budget of plan spender per day $0.30") {
				t.Fatalf("waiting: %+v, want s2/budget-1 naming the budget", run.Waiting)
			}
			if r := runCLI(t, dir, "answer", bb, "--step", "s2/budget-1", "--json", c.answer, "--by", "ana"); r.code != 0 {
				t.Fatalf("answer: exit %d\n%s", r.code, r.stderr)
			}
			r := runCLI(t, dir, "resume", bb, "-q")
			if r.code != c.code || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("resume: exit %d, want %d and %q\n%s", r.code, c.code, c.want, r.stderr)
			}
			run, steps := loadRun(t, bb)
			if len(run.Waiting) != 0 {
				t.Errorf("still waiting: %+v", run.Waiting)
			}
			if c.code != 0 {
				if !strings.Contains(run.Error+r.stderr, "ana stopped it at s2/budget-1") {
					t.Errorf("the failure does not say who stopped it: %s\n%s", run.Error, r.stderr)
				}
				return
			}
			if run.Status != board.StatusSucceeded {
				t.Fatalf("status %q: %s", run.Status, run.Error)
			}
			if got := stepResult(t, steps, "s2"); got["output"] != "ok" {
				t.Errorf("s2 after the raise: %v", got)
			}
			// The ledger has the three calls, settled; the raise was
			// this run's only.
			now := time.Now().UTC()
			recs, err := budget.Open(filepath.Join(dir, "ledger")).Records(now.Add(-time.Hour), now)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(budget.Sum(recs, now)); n != 3 {
				t.Errorf("%d calls in the ledger, want 3", n)
			}
			other := filepath.Join(dir, "other.json")
			if r := runCLI(t, dir, "run", "plan.yaml", "--out", other); r.code != 4 {
				t.Errorf("another run after the raise: exit %d, want 4 (the raise was the first run's)\n%s", r.code, r.stderr)
			}
			// Offline, with no ledger: the replay stops at the same call,
			// takes ana's answer and matches.
			t.Setenv("RUNNER_BUDGET_DIR", filepath.Join(dir, "none"))
			if r := runCLI(t, dir, "replay", bb, "--offline", "-q"); r.code != 0 {
				t.Errorf("offline replay of the raised run: exit %d\n%s", r.code, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "none")); err == nil {
				t.Errorf("the replay made a ledger")
			}
		})
	}
}
