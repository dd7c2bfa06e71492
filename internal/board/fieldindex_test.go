package board

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestQueryFindsWhatWasWrittenBeforeAndAfterItsIndex: the index a query
// by section, author, label or role uses is built by the first such
// query, over the entries so far, and then kept up to date; its answers
// are what a scan of every entry gives, before and after, while other
// goroutines write and query at once.
func TestQueryFindsWhatWasWrittenBeforeAndAfterItsIndex(t *testing.T) {
	b := New(Run{ID: "r"})
	write := func(i int) {
		if i%3 == 2 {
			if _, err := b.Write(WriteOp{Key: fmt.Sprintf("k%d", i%7), Value: i, Author: fmt.Sprintf("a%d", i%4),
				Role: "agent", Label: fmt.Sprintf("l%d", i%5), ExpectVersion: -1}); err != nil {
				t.Error(err)
			}
			return
		}
		e := Entry{Section: []string{"notes", "steps"}[i%2], Role: []string{"step", "agent"}[i%2],
			Author: fmt.Sprintf("a%d", i%4), Label: fmt.Sprintf("l%d", i%5), Content: i}
		if _, err := b.Append(e); err != nil {
			t.Error(err)
		}
	}
	filters := []Filter{{Section: "steps"}, {Author: "a1"}, {Label: "l3"}, {Role: "agent"}, {Key: "k3"},
		{Section: "kv", Label: "l2"}, {Author: "a0", Role: "step", Limit: 2}, {Label: "l4", AfterSeq: 30}, {Label: "none"},
		{Key: "k1", Author: "a3"}}
	// scan is the answer without the index: every entry, filtered.
	scan := func(f Filter) []Entry {
		var out []Entry
		for _, e := range b.Query(Filter{}) {
			if (f.Section == "" || e.Section == f.Section) && (f.Author == "" || e.Author == f.Author) &&
				(f.Label == "" || e.Label == f.Label) && (f.Role == "" || e.Role == f.Role) && (f.Key == "" || e.Key == f.Key) &&
				e.Seq > f.AfterSeq {
				out = append(out, e)
			}
		}
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[len(out)-f.Limit:]
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		for _, f := range filters {
			got, want := seqs(b.Query(f)), seqs(scan(f))
			if got != want {
				t.Errorf("%s: Query(%+v) = %s, want %s", when, f, got, want)
			}
		}
		// every version of a key, as the entry that made it
		for _, e := range scan(Filter{Key: "k5"}) {
			if got, ok := b.KeyVersion("k5", e.Version); !ok || got.Seq != e.Seq {
				t.Errorf("%s: KeyVersion(k5, %d) = seq %d, %v; want seq %d", when, e.Version, got.Seq, ok, e.Seq)
			}
		}
	}
	for i := range 40 {
		write(i)
	}
	if b.fields != nil {
		t.Fatal("the index was built before any query needed it")
	}
	if _, ok := b.KeyVersion("k5", 99); ok {
		t.Fatal("KeyVersion found a version never written")
	}
	check("its first query")
	for i := 40; i < 80; i++ {
		write(i)
	}
	check("after more writes")

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if g%2 == 0 {
					write(100 + g*50 + i)
				} else {
					b.Query(filters[i%len(filters)])
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	check("after writes and queries at once")
}

func seqs(es []Entry) string {
	s := ""
	for _, e := range es {
		s += fmt.Sprintf("%d ", e.Seq)
	}
	return s
}
