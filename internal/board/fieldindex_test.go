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
		e := Entry{Section: []string{"notes", "steps", "kv"}[i%3], Role: []string{"step", "agent"}[i%2],
			Author: fmt.Sprintf("a%d", i%4), Label: fmt.Sprintf("l%d", i%5), Content: i}
		if _, err := b.Append(e); err != nil {
			t.Error(err)
		}
	}
	filters := []Filter{{Section: "steps"}, {Author: "a1"}, {Label: "l3"}, {Role: "agent"},
		{Section: "kv", Label: "l2"}, {Author: "a0", Role: "step", Limit: 2}, {Label: "l4", AfterSeq: 30}, {Label: "none"}}
	// scan is the answer without the index: every entry, filtered.
	scan := func(f Filter) []Entry {
		var out []Entry
		for _, e := range b.Query(Filter{}) {
			if (f.Section == "" || e.Section == f.Section) && (f.Author == "" || e.Author == f.Author) &&
				(f.Label == "" || e.Label == f.Label) && (f.Role == "" || e.Role == f.Role) && e.Seq > f.AfterSeq {
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
	}
	for i := range 40 {
		write(i)
	}
	if b.fields != nil {
		t.Fatal("the index was built before any query needed it")
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
