package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// stepsPart is the page's Steps section.
func stepsPart(out string) string {
	return out[strings.Index(out, `<div id="steps">`):strings.Index(out, "<h2>Board</h2>")]
}

var detailsTag = regexp.MustCompile(`<details([^>]*)>|</details>`)

// outline is the Steps section as nested labels: "a b(c d(e))", with a
// "+" after a group shown open. It reads only the <details> tags.
func outline(steps string) string {
	var b strings.Builder
	type open struct {
		step bool
		kids int
	}
	var stack []open
	parentStep := func() *open {
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].step {
				return &stack[i]
			}
		}
		return nil
	}
	for _, m := range detailsTag.FindAllStringSubmatch(steps, -1) {
		if m[0] == "</details>" {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top.step && top.kids > 0 {
				b.WriteString(")")
			}
			continue
		}
		if !strings.Contains(m[1], `class="step`) {
			stack = append(stack, open{})
			continue
		}
		if p := parentStep(); p != nil {
			if p.kids == 0 {
				b.WriteString("(")
			} else {
				b.WriteString(" ")
			}
			p.kids++
		} else if b.Len() > 0 {
			b.WriteString(" ")
		}
		id := regexp.MustCompile(`id="step-([^"]+)-\d+"`).FindStringSubmatch(m[1])[1]
		b.WriteString(id)
		if strings.Contains(m[1], " group") && strings.HasSuffix(m[1], " open") {
			b.WriteString("+")
		}
		stack = append(stack, open{step: true})
	}
	return b.String()
}

// A step that ran others (a for_each's items, a sub-plan call's steps, a
// parallel group's children) is one section holding its children's rows,
// items in input order whatever order they finished in, with a summary
// line counting them; a large group starts closed, a small one open; a
// child whose group has no record yet (a live run) stays at the top.
func TestReportGroupsStepsUnderTheirGroup(t *testing.T) {
	ok := `{"output":"x"}`
	items := func(label string, n int, order func(i int) int) []board.StepRecord {
		var out []board.StepRecord
		for i := range n {
			j := order(i)
			st := "succeeded"
			if j == 1 {
				st = "failed"
			}
			out = append(out, step(fmt.Sprintf("%s[%d]", label, j), 1, label, st, 10+j, 5, ok))
		}
		return out
	}
	rev := func(n int) func(int) int { return func(i int) int { return n - 1 - i } }
	seq := func(i int) int { return i }
	cat := func(parts ...[]board.StepRecord) []board.StepRecord {
		var out []board.StepRecord
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	one := func(label, parent, status string, start int) []board.StepRecord {
		return []board.StepRecord{step(label, 1, parent, status, start, 50, ok)}
	}
	spawn := func(label, parent, status string, start int) []board.StepRecord {
		s := step(label, 1, parent, status, start, 50, ok)
		s.Type, s.Agent = "llm", label[strings.LastIndex(label, "-")+1:]
		return []board.StepRecord{s}
	}
	for _, c := range []struct {
		name    string
		steps   []board.StepRecord
		outline string
		sums    []string
	}{
		{"for_each items in input order", cat(one("a", "", "succeeded", 0), items("each", 3, rev(3)), one("each", "", "failed", 5), one("last", "", "succeeded", 100)),
			"a each+(each[0] each[1] each[2]) last", []string{"3 items: 2 succeeded, 1 failed"}},
		{"a sub-plan call's steps as they ran", cat(one("fix/review", "fix", "succeeded", 10), one("fix/check", "fix", "succeeded", 30), one("fix/propose", "fix", "succeeded", 20), one("fix", "", "succeeded", 5)),
			"fix+(fix/review fix/propose fix/check)", []string{"3 steps: 3 succeeded"}},
		{"a for_each of calls, nested", cat(
			one("fix[1]/review", "fix[1]", "succeeded", 11), one("fix[1]", "fix", "succeeded", 11),
			one("fix[0]/review", "fix[0]", "succeeded", 10), one("fix[0]/check", "fix[0]", "succeeded", 12), one("fix[0]", "fix", "succeeded", 10),
			one("fix", "", "succeeded", 5)),
			"fix+(fix[0]+(fix[0]/review fix[0]/check) fix[1]+(fix[1]/review))", []string{"2 items: 2 succeeded", "2 steps: 2 succeeded", "1 step: 1 succeeded"}},
		{"a parallel group", cat(one("lint", "checks", "succeeded", 20), one("vet", "checks", "succeeded", 10), one("checks", "", "succeeded", 5)),
			"checks+(vet lint)", []string{"2 children: 2 succeeded"}},
		{"an llm step's sub-agents, a sub-agent's own under it", cat(
			spawn("ask/spawn-1-critic", "ask", "succeeded", 12), spawn("ask/spawn-2-coder/spawn-3-critic", "ask/spawn-2-coder", "succeeded", 20),
			spawn("ask/spawn-2-coder", "ask", "failed", 11), one("ask", "", "succeeded", 5)),
			"ask+(ask/spawn-2-coder+(ask/spawn-2-coder/spawn-3-critic) ask/spawn-1-critic)", []string{"2 sub-agents: 1 succeeded, 1 failed", "1 sub-agent: 1 succeeded"}},
		{"a large for_each starts closed", cat(items("many", 30, seq), one("many", "", "failed", 5)),
			"many(" + strings.TrimSuffix(strings.Repeat("many[%d] ", 30), " ") + ")", []string{"30 items: 29 succeeded, 1 failed"}},
		{"a live run's items before their group's record", cat(one("a", "", "succeeded", 0), items("each", 2, seq)),
			"a each[0] each[1]", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := render(t, board.Run{ID: "r", Status: "succeeded"}, c.steps, nil)
			want := c.outline
			if strings.Contains(want, "%d") {
				var args []any
				for i := range 30 {
					args = append(args, i)
				}
				want = fmt.Sprintf(want, args...)
			}
			if got := outline(stepsPart(out)); got != want {
				t.Errorf("steps:\n got %s\nwant %s", got, want)
			}
			for _, s := range c.sums {
				if !strings.Contains(out, `<span class="group-sum">`+s+`</span>`) {
					t.Errorf("no summary %q", s)
				}
			}
		})
	}
}

// A large for_each's items are folded under one line on the timeline
// too, in input order; a small group's stay open.
func TestReportTimelineFoldsLargeGroups(t *testing.T) {
	ok := `{"output":""}`
	var steps []board.StepRecord
	for i := 29; i >= 0; i-- {
		steps = append(steps, step(fmt.Sprintf("many[%d]", i), 1, "many", "succeeded", 10+i, 5, ok))
	}
	steps = append(steps, step("many", 1, "", "succeeded", 5, 100, ok),
		step("vet", 1, "checks", "succeeded", 210, 5, ok), step("checks", 1, "", "succeeded", 200, 50, ok))
	out := render(t, board.Run{ID: "r", Status: "succeeded"}, steps, nil)
	tl := out[strings.Index(out, `id="timeline"`):strings.Index(out, "<h2>Steps</h2>")]
	if !strings.Contains(tl, `<details class="kids" data-group="many"><summary>30 items: 30 succeeded</summary>`) {
		t.Errorf("the 30 items are not folded:\n%s", tl)
	}
	if !strings.Contains(tl, `<div class="kids" data-group="checks">`) {
		t.Errorf("a group of one is folded:\n%s", tl)
	}
	last := -1
	for i := range 30 {
		at := strings.Index(tl, fmt.Sprintf(`data-label="many[%d]"`, i))
		if at < last {
			t.Fatalf("item %d comes before item %d on the timeline", i, i-1)
		}
		last = at
	}
}
