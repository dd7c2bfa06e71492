package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/budget"
)

// The worst case a dry run gives: loops by max_visits, for_each by a
// var's list, a for_each over a step's output unbounded.
func TestDryRunWorstCost(t *testing.T) {
	r := runCLI(t, "testdata", "run", "cost.yaml", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	_, cost, ok := strings.Cut(r.stdout, "worst-case cost")
	if !ok {
		t.Fatalf("no worst-case cost:\n%s", r.stdout)
	}
	golden(t, "cost.dry-run.golden", "worst-case cost"+cost)
	v := runCLI(t, "testdata", "validate", "--cost", "cost.yaml")
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
	r := runCLI(t, "testdata", "run", "cost.yaml", "--engine", "temporal", "--temporal", "127.0.0.1:1")
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
