package board

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestKeyValue(t *testing.T) {
	b := New(Run{ID: "r"})
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b.SetClock(func() time.Time { return now })

	e, err := b.Write(WriteOp{Key: "plan", Value: "v1", Author: "coder", ExpectVersion: 0})
	if err != nil || e.Version != 1 {
		t.Fatalf("first write: %+v %v", e, err)
	}
	if _, err := b.Write(WriteOp{Key: "plan", Value: "again", ExpectVersion: 0}); !errors.Is(err, ErrVersion) {
		t.Fatalf("create-only write over an existing key: err = %v, want ErrVersion", err)
	}
	if _, err := b.Write(WriteOp{Key: "plan", Value: "v2", ExpectVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(WriteOp{Key: "plan", Value: "stale", ExpectVersion: 1}); !errors.Is(err, ErrVersion) {
		t.Fatalf("stale compare-and-set: err = %v", err)
	}
	got, ok := b.Get("plan")
	if !ok || got.Content != "v2" || got.Version != 2 {
		t.Fatalf("Get = %+v %v, want v2 at version 2", got, ok)
	}

	// TTL: live until it runs out, then absent, and a create-only write works again.
	if _, err := b.Write(WriteOp{Key: "lock", Value: "me", TTL: time.Minute, ExpectVersion: -1}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(59 * time.Second)
	if _, ok := b.Get("lock"); !ok {
		t.Fatal("lock expired early")
	}
	now = now.Add(time.Second)
	if _, ok := b.Get("lock"); ok {
		t.Fatal("lock outlived its ttl")
	}
	if len(b.Keys("lo")) != 0 {
		t.Fatal("an expired key is listed")
	}
	if e, err := b.Write(WriteOp{Key: "lock", Value: "you", ExpectVersion: 0}); err != nil || e.Version != 2 {
		t.Fatalf("taking an expired lock: %+v %v", e, err)
	}

	// Delete leaves a tombstone: the key reads absent, its history stays.
	if _, err := b.Write(WriteOp{Key: "plan", Delete: true, ExpectVersion: -1}); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Get("plan"); ok {
		t.Fatal("deleted key still reads")
	}
	if _, err := b.Write(WriteOp{Key: "plan", Delete: true, ExpectVersion: -1}); err == nil {
		t.Fatal("deleting an absent key succeeded")
	}
	if n := len(b.Query(Filter{Key: "plan"})); n != 3 {
		t.Fatalf("plan has %d entries in its history, want 3", n)
	}
	if keys := b.Keys(""); len(keys) != 1 || keys[0].Key != "lock" {
		t.Fatalf("Keys = %+v", keys)
	}
}

func TestQuery(t *testing.T) {
	b := New(Run{})
	for i := 0; i < 30; i++ {
		b.Append(Entry{Section: []string{"llm", "steps", "notes"}[i%3], Author: fmt.Sprintf("a%d", i%2),
			Label: fmt.Sprintf("l%d", i%5), Role: "assistant", Content: i})
	}
	tests := []struct {
		f    Filter
		want []int // contents
	}{
		{Filter{Section: "llm", Author: "a0"}, []int{0, 6, 12, 18, 24}},
		{Filter{Label: "l1", Limit: 2}, []int{21, 26}},
		{Filter{Section: "notes", AfterSeq: 20}, []int{20, 23, 26, 29}},
		{Filter{Section: "none"}, nil},
		{Filter{Limit: 3}, []int{27, 28, 29}},
	}
	for _, tt := range tests {
		var got []int
		for _, e := range b.Query(tt.f) {
			got = append(got, e.Content.(int))
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Query(%+v) = %v, want %v", tt.f, got, tt.want)
		}
	}
}

// Parallel steps write concurrently: seqs stay unique and dense, and a
// compare-and-set counter loses no increment.
func TestConcurrentWrites(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				for {
					cur, _ := b.Get("n")
					n, _ := cur.Content.(int)
					if _, err := b.Write(WriteOp{Key: "n", Value: n + 1, ExpectVersion: cur.Version}); err == nil {
						break
					}
				}
				b.Append(Entry{Section: "log", Content: i})
				b.Query(Filter{Section: "log", Limit: 5})
			}
		}()
	}
	wg.Wait()
	if e, _ := b.Get("n"); e.Content != 400 {
		t.Fatalf("counter = %v, want 400", e.Content)
	}
	b.Close()
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range loaded.Entries() {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
	if loaded.Len() != 800 {
		t.Fatalf("loaded %d entries, want 800", loaded.Len())
	}
}

// A plan source shared with the board is kept only when it is the run's.
func TestSharePlanSource(t *testing.T) {
	b := New(Run{ID: "r", PlanSource: "steps: []\n"})
	b.SharePlanSource("steps: [x]\n")
	if got := b.Run().PlanSource; got != "steps: []\n" {
		t.Errorf("another text replaced the plan source: %q", got)
	}
	b.SharePlanSource(strings.Clone("steps: []\n"))
	if got := b.Run().PlanSource; got != "steps: []\n" {
		t.Errorf("the plan source is %q", got)
	}
}
