package report

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// A group that runs many times (a parallel group in a loop) costs the
// timeline a look at each child about once: each visit looked through
// the children of all the group's visits before, n² for n visits.
func TestTimelineLooksAtEachChildOnce(t *testing.T) {
	for _, visits := range []int{1, 10, 300} {
		b := board.New(board.Run{ID: "r", Status: "succeeded", PlanSource: "version: 1\nsteps: []\n", StartedAt: t0})
		for v := 1; v <= visits; v++ {
			base := 100 * v
			for i, c := range []string{"a", "b", "c"} {
				if err := b.AddStep(step(c, v, "g", "succeeded", base+1+i, 5, `{}`)); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.AddStep(step("g", v, "", "succeeded", base, 50, `{}`)); err != nil {
				t.Fatal(err)
			}
		}
		before := timelineChildrenLooked.Load()
		var buf bytes.Buffer
		if err := WriteWith(&buf, b, Options{Now: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if looked, want := timelineChildrenLooked.Load()-before, int64(3*visits); looked != want {
			t.Errorf("%d visits of a group of 3: the timeline looked at %d children; want %d", visits, looked, want)
		}
	}
}

// The timeline gives each group visit the children it gave before: those
// of its label that started at or after it and ended by its end, in the
// saved order (then ordered by before), children without an end
// included; checked against the scan it replaces on random runs.
func TestTimelineChildrenAsBefore(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for round := range 200 {
		var steps []*stepView
		byParent := map[string][]*stepView{}
		for i := range 1 + rng.Intn(30) {
			group := []string{"g", "h", "each"}[rng.Intn(3)]
			label := fmt.Sprintf("c%d", rng.Intn(4))
			if group == "each" {
				label = fmt.Sprintf("each[%d]", rng.Intn(5))
			}
			start := rng.Intn(200)
			end := at(start + rng.Intn(50))
			if rng.Intn(8) == 0 {
				end = time.Time{} // still running
			}
			if rng.Intn(3) == 0 { // a group visit
				s := &stepView{Rec: recOf(&board.StepRecord{Label: group, Visit: i, StartedAt: at(start), FinishedAt: end})}
				steps = append(steps, s)
				continue
			}
			s := &stepView{Rec: recOf(&board.StepRecord{Label: label, Visit: i, Parent: group, StartedAt: at(start), FinishedAt: end})}
			steps = append(steps, s)
			byParent[group] = append(byParent[group], s)
		}
		var got []row
		for c := range timeline(steps, byParent).chunks() {
			got = append(got, c...)
		}
		want := scanTimeline(steps, byParent)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d rows, want %d", round, len(got), len(want))
		}
		for i := range got {
			if g, w := ids(got[i].Children), ids(want[i].Children); g != w || got[i].Step != want[i].Step {
				t.Fatalf("round %d, row %d (%s): children %s, want %s", round, i, want[i].Step.Rec.Label, g, w)
			}
		}
	}
}

// scanTimeline is the timeline as it was: every child of the label,
// looked at for every visit.
func scanTimeline(steps []*stepView, byParent map[string][]*stepView) []row {
	var rows []row
	for _, s := range steps {
		if s.Rec.Parent != "" {
			continue
		}
		r := row{Step: s}
		for _, c := range byParent[s.Rec.Label] {
			if !c.Rec.StartedAt().Before(s.Rec.StartedAt()) && !c.Rec.FinishedAt().After(s.Rec.FinishedAt()) {
				r.Children = append(r.Children, c)
			}
		}
		sort.SliceStable(r.Children, func(i, j int) bool { return before(r.Children[i], r.Children[j]) })
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Step.Rec.StartedAt().Before(rows[j].Step.Rec.StartedAt()) })
	return rows
}

func ids(ss []*stepView) string {
	var b bytes.Buffer
	for _, s := range ss {
		b.WriteString(s.ID() + " ")
	}
	return b.String()
}
