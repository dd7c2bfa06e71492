package board

import (
	"encoding/json"
	"reflect"
	"testing"
)

// StepsShared gives the records Steps gives (large results built whole),
// and what it gave stays as it was while the board goes on: steps added
// after it, by the board or by an append of the caller, do not show in
// it or in the board.
func TestStepsSharedAsSteps(t *testing.T) {
	for _, big := range []bool{false, true} {
		path := t.TempDir() + "/blackboard.json"
		b, err := Create(path, Run{ID: "r"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		fill(t, b, 1)
		if big {
			writeBig(t, b, bigText(BlobMin*2))
		}
		fill(t, b, 1)
		b.Save()
		b.Close()
		l, err := LoadToResume(path)
		if err != nil {
			t.Fatal(err)
		}
		shared := l.StepsShared()
		if !reflect.DeepEqual(shared, l.Steps()) {
			t.Fatalf("big %v: StepsShared differs from Steps", big)
		}
		before := append([]StepRecord(nil), shared...)
		_ = append(shared, StepRecord{Label: "caller's"})
		if err := l.AddStep(StepRecord{Label: "later", Visit: 1, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(shared, before) {
			t.Errorf("big %v: the records handed out changed", big)
		}
		all := l.Steps()
		if len(all) != len(before)+1 || all[len(all)-1].Label != "later" {
			t.Errorf("big %v: the board holds %d steps, the last %q; want %d, \"later\"", big, len(all), all[len(all)-1].Label, len(before)+1)
		}
	}
}
