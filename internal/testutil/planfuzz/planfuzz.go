// Package planfuzz writes random plans, deterministic from a random
// source: the plans TestReplayRandomPlans (cmd/runner) records and
// replays, and, with Options.Cross, the plans the cross-engine test
// (module temporal) runs in process and on Temporal.
package planfuzz

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

// Options choose what the plans may hold.
type Options struct {
	// Cross leaves out what two engines need not do alike: races
	// (siblings on one key, a fail_fast group whose failure could come
	// before or after a sibling's end), the clock (now(), TTLs, the
	// run's timeout), random output and model calls in parallel groups.
	// What it keeps is timed with margins: a failing child of a
	// fail_fast group fails after its siblings' quick work is done, and
	// its long siblings are canceled long before they would end.
	Cross bool
}

// Plan writes the n-th random plan from r: sequences, parallel groups
// with and without fail_fast and max_concurrency, loops, branches (on
// results, the board and, without Cross, the clock), retries with until,
// failures, continue_on_error, board writes with TTLs and
// compare-and-set, a script agent, and limits.
func Plan(r *rand.Rand, n int, opt Options) string {
	g := &gen{r: r, cross: opt.Cross}
	fmt.Fprintf(&g.b, "version: 1\nname: prop-%d\n", n)
	if g.cross {
		g.crossPlan()
		return g.b.String()
	}
	switch r.IntN(6) {
	case 0:
		fmt.Fprintf(&g.b, "limits: {max_steps: %d}\n", 5+r.IntN(15))
	case 1:
		fmt.Fprintf(&g.b, "limits: {timeout: %dms}\n", 100+r.IntN(300))
	}
	g.agent()
	for i := range 3 + r.IntN(8) {
		g.step(i + 1)
	}
	return g.b.String()
}

type gen struct {
	r      *rand.Rand
	cross  bool
	b      strings.Builder
	labels []string // top-level labels so far
	all    []string // every label so far (children too)
	keys   []string
	loops  int
}

func (g *gen) agent() {
	answers := make([]string, 60)
	for i := range answers {
		answers[i] = fmt.Sprintf("answer %d", i)
	}
	fmt.Fprintf(&g.b, "agents:\n  bot: {provider: script, responses: [%s]}\nsteps:\n", strings.Join(answers, ", "))
}

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) ref() string {
	if len(g.all) == 0 || g.r.IntN(2) == 0 {
		return fmt.Sprintf("w%d", g.r.IntN(1000))
	}
	return fmt.Sprintf("${{ steps.%s.output }}", g.pick(g.all))
}

func (g *gen) key() string {
	if len(g.keys) == 0 || g.r.IntN(3) == 0 {
		g.keys = append(g.keys, fmt.Sprintf("k%d", len(g.keys)))
	}
	return g.pick(g.keys)
}

func sleepFor(r *rand.Rand) string {
	return fmt.Sprintf("sleep 0.0%d; ", 1+r.IntN(5))
}

// leaf is one step that is not a group; coe: continue_on_error.
func (g *gen) leaf(label string, inGroup bool) string {
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

func (g *gen) when() string {
	switch g.r.IntN(4) {
	case 0:
		return fmt.Sprintf("steps.%s.ok", g.pick(g.all))
	case 1:
		return fmt.Sprintf("board(\"%s\") == nil", g.key())
	case 2:
		if !g.cross {
			return "now().Nanosecond() % 2 == 0"
		}
		return fmt.Sprintf("steps.%s.visits > 1", g.pick(g.all))
	}
	return fmt.Sprintf("steps.%s.failed", g.pick(g.all))
}

func (g *gen) step(i int) {
	label := fmt.Sprintf("s%d", i)
	defer func() { g.labels = append(g.labels, label); g.all = append(g.all, label) }()
	switch k := g.r.IntN(10); {
	case k < 2 && len(g.all) > 0:
		g.branch(label)
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
	case k == 4:
		// A for_each: its items are a group's children, so the leaf is
		// one a group may hold.
		leaf := strings.TrimSuffix(g.leaf(label, true), "}")
		list := []string{`'[1, 2, 3]'`, `'["a", "b"]'`, `'[]'`, `'split("x,y,z,w", ",")'`}[g.r.IntN(4)]
		opts := ""
		if g.r.IntN(2) == 0 {
			opts += ", fail_fast: false"
		}
		if g.r.IntN(2) == 0 {
			opts += fmt.Sprintf(", max_concurrency: %d", 1+g.r.IntN(2))
		}
		fmt.Fprintf(&g.b, "  - %s, for_each: %s%s}\n", leaf, list, opts)
	default:
		fmt.Fprintf(&g.b, "  - %s\n", g.leaf(label, false))
	}
}

func (g *gen) branch(label string) {
	fmt.Fprintf(&g.b, "  - label: %s\n    type: branch\n    cases:\n", label)
	if g.loops < 2 && len(g.labels) > 1 && g.r.IntN(2) == 0 {
		g.loops++
		fmt.Fprintf(&g.b, "      - {when: 'steps.%s.visits < %d && %s', goto: %s}\n", label, 2+g.r.IntN(2), g.when(), g.pick(g.labels))
	}
	fmt.Fprintf(&g.b, "      - {when: '%s', goto: %s}\n", g.when(), "end")
	if g.r.IntN(6) == 0 {
		fmt.Fprintf(&g.b, "    default: fail\n")
	}
}

// Each calls check for plan numbers 0 to n-1 (only the one numbered only
// when only >= 0), at most conc at a time, and waits for them: the random
// plans mostly wait for processes and timers, so they run side by side.
func Each(n, only, conc int, check func(n int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for i := range n {
		if only >= 0 && i != only {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			check(i)
		}()
	}
	wg.Wait()
}
