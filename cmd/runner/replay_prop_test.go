package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/replay"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	propPlans = flag.Int("plans", 200, "random plans the replay property test runs")
	propSeed  = flag.Uint64("seed", 0, "seed of the replay property test (0: a new one, printed)")
	propOnly  = flag.Int("plan", -1, "run only this plan of the replay property test (with -seed)")
)

// genPlan writes a random plan: sequences, parallel groups with and
// without fail_fast, loops, branches (on results, the board and the
// clock), retries with until, failures, continue_on_error, board writes
// with TTLs and compare-and-set, a script agent, and limits.
type genPlan struct {
	r      *rand.Rand
	b      strings.Builder
	labels []string // top-level labels so far
	all    []string // every label so far (children too)
	keys   []string
	loops  int
}

func (g *genPlan) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *genPlan) ref() string {
	if len(g.all) == 0 || g.r.IntN(2) == 0 {
		return fmt.Sprintf("w%d", g.r.IntN(1000))
	}
	return fmt.Sprintf("${{ steps.%s.output }}", g.pick(g.all))
}

func (g *genPlan) key() string {
	if len(g.keys) == 0 || g.r.IntN(3) == 0 {
		g.keys = append(g.keys, fmt.Sprintf("k%d", len(g.keys)))
	}
	return g.pick(g.keys)
}

func sleepFor(r *rand.Rand) string {
	return fmt.Sprintf("sleep 0.0%d; ", 1+r.IntN(5))
}

// leaf is one step that is not a group; coe: continue_on_error.
func (g *genPlan) leaf(label string, inGroup bool) string {
	coe := ""
	if g.r.IntN(3) == 0 {
		coe = ", continue_on_error: true"
	}
	switch k := g.r.IntN(10); {
	case k < 3:
		run := "echo " + label + "-" + g.ref()
		if g.r.IntN(3) == 0 {
			run = sleepFor(g.r) + run
		}
		if g.r.IntN(8) == 0 {
			run += "; exit 1"
		}
		return fmt.Sprintf("{label: %s, type: command, run: %q%s}", label, run, coe)
	case k == 3:
		return fmt.Sprintf("{label: %s, type: command, run: \"echo $((RANDOM %% 3))\", retry: {max: 3, backoff: 1ms, until: 'step.output == \"0\"'}, continue_on_error: true}", label)
	case k == 4 || k == 5:
		ttl := ""
		if g.r.IntN(2) == 0 {
			ttl = fmt.Sprintf(", ttl: %dms", 20+g.r.IntN(60))
		}
		cas := ""
		if g.r.IntN(4) == 0 {
			cas, coe = fmt.Sprintf(", expect_version: %d", g.r.IntN(2)), ", continue_on_error: true"
		}
		return fmt.Sprintf("{label: %s, type: board, op: write, key: %s, value: %q%s%s%s}", label, g.key(), g.ref(), ttl, cas, coe)
	case k == 6:
		return fmt.Sprintf("{label: %s, type: board, op: read, key: %s}", label, g.key())
	case k == 7 && !inGroup:
		return fmt.Sprintf("{label: %s, type: command, run: %q}", label, sleepFor(g.r)+"echo waited")
	default:
		return fmt.Sprintf("{label: %s, type: llm, agent: bot, prompt: %q%s}", label,
			"Say something about "+g.ref()+" (run started ${{ run.started_at }}, key "+g.key()+" = ${{ board('"+g.key()+"') }})", coe)
	}
}

func (g *genPlan) when() string {
	switch g.r.IntN(4) {
	case 0:
		return fmt.Sprintf("steps.%s.ok", g.pick(g.all))
	case 1:
		return fmt.Sprintf("board(\"%s\") == nil", g.key())
	case 2:
		return "now().Nanosecond() % 2 == 0"
	}
	return fmt.Sprintf("steps.%s.failed", g.pick(g.all))
}

func (g *genPlan) step(i int) {
	label := fmt.Sprintf("s%d", i)
	defer func() { g.labels = append(g.labels, label); g.all = append(g.all, label) }()
	switch k := g.r.IntN(10); {
	case k < 2 && len(g.all) > 0:
		fmt.Fprintf(&g.b, "  - label: %s\n    type: branch\n    cases:\n", label)
		if g.loops < 2 && len(g.labels) > 1 && g.r.IntN(2) == 0 {
			g.loops++
			fmt.Fprintf(&g.b, "      - {when: 'steps.%s.visits < %d && %s', goto: %s}\n", label, 2+g.r.IntN(2), g.when(), g.pick(g.labels))
		}
		fmt.Fprintf(&g.b, "      - {when: '%s', goto: %s}\n", g.when(), "end")
		if g.r.IntN(6) == 0 {
			fmt.Fprintf(&g.b, "    default: fail\n")
		}
	case k < 4:
		fmt.Fprintf(&g.b, "  - label: %s\n", label)
		if g.r.IntN(2) == 0 {
			fmt.Fprintf(&g.b, "    fail_fast: false\n")
		}
		if g.r.IntN(2) == 0 {
			fmt.Fprintf(&g.b, "    max_concurrency: %d\n", 1+g.r.IntN(2))
		}
		fmt.Fprintf(&g.b, "    parallel:\n")
		var kids []string
		for j := range 2 + g.r.IntN(3) {
			c := fmt.Sprintf("%sc%d", label, j)
			fmt.Fprintf(&g.b, "      - %s\n", g.leaf(c, true))
			kids = append(kids, c)
		}
		g.all = append(g.all, kids...)
	default:
		fmt.Fprintf(&g.b, "  - %s\n", g.leaf(label, false))
	}
}

func randomPlan(r *rand.Rand, n int) string {
	g := &genPlan{r: r}
	fmt.Fprintf(&g.b, "version: 1\nname: prop-%d\n", n)
	switch r.IntN(6) {
	case 0:
		fmt.Fprintf(&g.b, "limits: {max_steps: %d}\n", 5+r.IntN(15))
	case 1:
		fmt.Fprintf(&g.b, "limits: {timeout: %dms}\n", 100+r.IntN(300))
	}
	answers := make([]string, 60)
	for i := range answers {
		answers[i] = fmt.Sprintf("answer %d", i)
	}
	fmt.Fprintf(&g.b, "agents:\n  bot: {provider: script, responses: [%s]}\nsteps:\n", strings.Join(answers, ", "))
	for i := range 3 + r.IntN(8) {
		g.step(i + 1)
	}
	return g.b.String()
}

// propCase records one random plan (killed at a random moment and resumed,
// for some), then replays it offline and requires a match.
func propCase(t *testing.T, n int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	src := randomPlan(r, n)
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(src), 0o644)
	bb := filepath.Join(wd, "bb.json")
	how := "run"
	if r.IntN(4) == 0 {
		how = "killed, resumed"
		cmd := exec.Command(binary, "run", plan, "-q", "--out", bb)
		cmd.Dir = wd
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(time.Duration(r.IntN(120)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if _, err := os.Stat(bb); err != nil {
			how = "killed before the board existed, run again"
			runCLI(t, wd, "run", plan, "-q", "--out", bb)
		} else if res := resumeKilled(t, wd, bb); res.code == exitUsage {
			t.Errorf("plan %d (seed %d): resume: %s\n%s", n, seed, res.stderr, src)
			return
		}
	} else if res := runCLI(t, wd, "run", plan, "-q", "--out", bb); res.code == exitUsage {
		t.Errorf("plan %d (seed %d): the generator made a bad plan: %s\n%s", n, seed, res.stderr, src)
		return
	} else if res.code == 1 && r.IntN(2) == 0 {
		how = "failed, resumed"
		runCLI(t, wd, "resume", bb, "-q")
	}
	// The replay runs in this process, through the library.
	saved, err := board.Load(bb)
	if err != nil {
		t.Errorf("plan %d (seed %d, %s): %v\n%s", n, seed, how, err, src)
		return
	}
	rep, err := replay.Run(context.Background(), saved, replay.Options{})
	if err != nil || !rep.Matched() {
		div := ""
		if err == nil {
			div = rep.Divergence.String()
		}
		t.Errorf("plan %d (seed %d, %s): %v\n%s\n%s", n, seed, how, err, div, src)
	}
}

// Random plans, some killed at a random moment and resumed, all replay
// offline to a match. -plans N runs more; -seed S repeats a run.
func TestReplayRandomPlans(t *testing.T) {
	seed := *propSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (go test -run TestReplayRandomPlans -seed %d to repeat)", seed, seed)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6) // the plans mostly sleep
	for n := range *propPlans {
		if *propOnly >= 0 && n != *propOnly {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			propCase(t, n, seed)
		}()
	}
	wg.Wait()
}

// resumeKilled resumes a run whose process was just killed, waiting
// briefly while the board's lock still names the dead process.
func resumeKilled(t *testing.T, wd, bb string) result {
	var res result
	for range 20 {
		if res = runCLI(t, wd, "resume", bb, "-q"); res.code != exitUsage || !strings.Contains(res.stderr, "is live") {
			return res
		}
		time.Sleep(50 * time.Millisecond)
	}
	return res
}
