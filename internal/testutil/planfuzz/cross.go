package planfuzz

import (
	"fmt"
	"strings"
)

// failAfter is how long the failing child of a fail_fast group works
// before it fails, once its quick siblings (an echo, a board step) have
// succeeded: it `needs` them, so they are done on every engine however
// loaded the machine is (a fixed head start was not enough: with a load
// average of 30 on two cores a quick sibling's activity on Temporal was
// still running two seconds later, and was canceled there but not in
// process), while its long siblings (longRun) are still running.
const (
	failAfter = "1"
	longRun   = "sleep 30"
)

func (g *gen) crossPlan() {
	groups := g.r.IntN(4) != 0
	if !groups && g.r.IntN(3) == 0 {
		// Without groups the count of step executions is the same
		// everywhere; in a group it depends on how the children race.
		fmt.Fprintf(&g.b, "limits: {max_steps: %d}\n", 5+g.r.IntN(15))
	}
	g.agent()
	for i := range 3 + g.r.IntN(8) {
		g.crossStep(i+1, groups)
	}
}

func (g *gen) crossStep(i int, groups bool) {
	label := fmt.Sprintf("s%d", i)
	defer func() { g.labels = append(g.labels, label); g.all = append(g.all, label) }()
	switch k := g.r.IntN(10); {
	case k < 2 && len(g.all) > 0:
		g.branch(label)
	case k < 5 && groups:
		g.crossGroup(label)
	default:
		fmt.Fprintf(&g.b, "  - %s\n", g.crossLeaf(label))
	}
}

func (g *gen) coe() string {
	if g.r.IntN(3) == 0 {
		return ", continue_on_error: true"
	}
	return ""
}

// counter is a command that counts its runs in a file of the workdir:
// output that changes from run to run, the same on every engine.
func counter(label string) string {
	return fmt.Sprintf("n=$(cat n_%s 2>/dev/null || echo 0); n=$((n+1)); echo $n > n_%s; echo $n", label, label)
}

// crossLeaf is a top-level step that is not a branch or a group.
func (g *gen) crossLeaf(label string) string {
	switch k := g.r.IntN(13); {
	case k < 3:
		run := "echo " + label + "-" + g.ref()
		if g.r.IntN(6) == 0 {
			run += "; exit 1"
		}
		return fmt.Sprintf("{label: %s, type: command, run: %q%s}", label, run, g.coe())
	case k == 3:
		return fmt.Sprintf("{label: %s, type: command, run: %q, retry: {max: %d, backoff: 1ms, until: 'step.output == \"%d\"'}%s}",
			label, counter(label), 1+g.r.IntN(3), 1+g.r.IntN(4), g.coe())
	case k == 4:
		return fmt.Sprintf("{label: %s, type: command, run: %q, retry: {max: %d, backoff: 1ms}%s}",
			label, counter(label)+fmt.Sprintf("; test $n -ge %d", 1+g.r.IntN(4)), 1+g.r.IntN(3), g.coe())
	case k == 5 || k == 6:
		return g.crossWrite(label, g.key(), true)
	case k == 7:
		return fmt.Sprintf("{label: %s, type: board, op: read, key: %s}", label, g.key())
	case k == 8:
		return fmt.Sprintf("{label: %s, type: command, run: \"sleep 30\", timeout: 100ms%s}", label, g.coe())
	case k == 9:
		// Answered by the test (Answer), in process by a resume, on
		// Temporal by an update while the workflow waits. Only at the top
		// level: in a group, a sibling's failure ends a run in process
		// before the question is answered, not on Temporal.
		return fmt.Sprintf("{label: %s, type: input, prompt: %q, form: {properties: {ok: {type: boolean}, note: {type: string}}, required: [ok]}}",
			label, "Go on after "+g.ref()+"?")
	default:
		return fmt.Sprintf("{label: %s, type: llm, agent: bot, prompt: %q%s}", label,
			"Say something about "+g.ref()+" (key "+g.key()+" = ${{ board('"+g.key()+"') }})", g.coe())
	}
}

// crossWrite writes key, with a TTL no run outlives and, when cas, maybe
// a compare-and-set.
func (g *gen) crossWrite(label, key string, cas bool) string {
	extra := ""
	if g.r.IntN(3) == 0 {
		extra = ", ttl: 24h"
	}
	if cas && g.r.IntN(3) == 0 {
		extra += fmt.Sprintf(", expect_version: %d, continue_on_error: true", g.r.IntN(2))
	} else {
		extra += g.coe()
	}
	return fmt.Sprintf("{label: %s, type: board, op: write, key: %s, value: %q%s}", label, key, g.ref(), extra)
}

// crossGroup is a parallel group whose outcome does not depend on how its
// children race: each writes its own key, reads only keys written before
// the group, and with fail_fast at most one child fails (the first, after
// its quick siblings and failAfter), while the others are quick or long.
func (g *gen) crossGroup(label string) {
	fmt.Fprintf(&g.b, "  - label: %s\n", label)
	failFast := g.r.IntN(2) == 0
	if !failFast {
		fmt.Fprintf(&g.b, "    fail_fast: false\n")
	}
	limit := 0
	if g.r.IntN(2) == 0 {
		limit = 1 + g.r.IntN(3)
	}
	n := 2 + g.r.IntN(3)
	failing := failFast && g.r.IntN(2) == 0
	if limit > 0 && !failing {
		// A failing child waits for its quick siblings, so none may wait
		// for a slot a long sibling holds.
		fmt.Fprintf(&g.b, "    max_concurrency: %d\n", limit)
	}
	fmt.Fprintf(&g.b, "    parallel:\n")
	var kids, keys, lines, quick []string
	for j := range n {
		c := fmt.Sprintf("%sc%d", label, j)
		kids = append(kids, c)
		var s string
		switch k := g.r.IntN(8); {
		case j == 0 && failing:
			s = fmt.Sprintf("{label: %s, type: command, run: \"sleep %s; exit 1\"}", c, failAfter)
		case k < 2 && failing:
			s = fmt.Sprintf("{label: %s, type: command, run: %q}", c, longRun)
		case k < 3:
			run := "echo " + c + "-" + g.ref()
			if g.r.IntN(4) == 0 {
				run += "; exit 1"
			}
			coe := ", continue_on_error: true"
			if !failFast {
				coe = g.coe()
			} else if g.r.IntN(2) == 0 {
				run = "echo " + c // a tolerated failure would be only a failure in a fail_fast group
				coe = ""
			}
			s = fmt.Sprintf("{label: %s, type: command, run: %q%s}", c, run, coe)
		case k < 4:
			s = fmt.Sprintf("{label: %s, type: command, run: %q}", c, counter(c))
		case k < 6:
			key := "g_" + c
			keys = append(keys, key)
			s = g.crossWrite(c, key, !failFast)
			if failFast && len(s) > 0 {
				// In a fail_fast group a lost compare-and-set or a
				// failure is left out: it could come before a sibling
				// started, in one engine and not the other.
				s = fmt.Sprintf("{label: %s, type: board, op: write, key: %s, value: %q}", c, key, g.ref())
			}
		case len(g.keys) > 0:
			s = fmt.Sprintf("{label: %s, type: board, op: read, key: %s}", c, g.pick(g.keys))
		default:
			s = fmt.Sprintf("{label: %s, type: command, run: \"echo %s\"}", c, c)
		}
		lines = append(lines, s)
		if j > 0 && !strings.Contains(s, longRun) {
			quick = append(quick, c)
		}
	}
	if failing && len(quick) > 0 {
		lines[0] = strings.TrimSuffix(lines[0], "}") + fmt.Sprintf(", needs: [%s]}", strings.Join(quick, ", "))
	}
	for _, s := range lines {
		fmt.Fprintf(&g.b, "      - %s\n", s)
	}
	g.all = append(g.all, kids...)
	g.keys = append(g.keys, keys...)
}

// Answer is the answer the cross-engine test gives an input step visit.
func Answer(label string, visit int) map[string]any {
	return map[string]any{"ok": visit%2 == 1, "note": fmt.Sprintf("%s#%d", label, visit)}
}
