package board

import (
	"testing"
	"time"
)

// Query's topic and time filters, and EntryByID: what `runner board
// entries` and `entry ID` print.
func TestQueryTopicTimeAndID(t *testing.T) {
	b := New(Run{})
	t0 := time.Date(2026, 2, 4, 10, 0, 0, 0, time.UTC)
	now := t0
	b.SetClock(func() time.Time { return now })
	var ids []string
	for i, w := range []struct{ key, topic string }{{"task:a", ""}, {"signal:x", "status"}, {"task:b", ""}} {
		now = t0.Add(time.Duration(i) * time.Second)
		e, err := b.Write(WriteOp{Key: w.key, Value: i, Author: "a", Topic: w.topic})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, c := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"topic from the key", Filter{Topic: "task"}, []string{"task:a", "task:b"}},
		{"topic given", Filter{Topic: "status"}, []string{"signal:x"}},
		{"since is inclusive", Filter{Since: at(1)}, []string{"signal:x", "task:b"}},
		{"until is exclusive", Filter{Until: at(1)}, []string{"task:a"}},
		{"a window", Filter{Since: at(1), Until: at(2)}, []string{"signal:x"}},
		{"time and topic", Filter{Since: at(1), Topic: "task"}, []string{"task:b"}},
		{"nothing after", Filter{Since: at(3)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, e := range b.Query(c.f) {
				got = append(got, e.Key)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
	for i, id := range ids {
		if e, ok := b.EntryByID(id); !ok || e.Seq != int64(i+1) {
			t.Errorf("EntryByID(%s) = seq %d, %v; want seq %d", id, e.Seq, ok, i+1)
		}
	}
	for _, id := range []string{"", "nope"} {
		if _, ok := b.EntryByID(id); ok {
			t.Errorf("EntryByID(%q) found an entry", id)
		}
	}
}
