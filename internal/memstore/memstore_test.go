package memstore

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Writers at once (each opens the store under its lock, as processes
// do) lose nothing; versions count every write of a key; a TTL expires;
// provenance is kept.
func TestStore(t *testing.T) {
	path, err := Path(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	st := Open(path)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				if _, err := st.Write(fmt.Sprintf("k%d", i), w, 0, Provenance{Agent: fmt.Sprintf("a%d", w), RunID: "r1", Label: "s", Visit: 1}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	es, err := st.List("k")
	if err != nil || len(es) != 5 {
		t.Fatalf("list: %d entries, %v", len(es), err)
	}
	for _, e := range es {
		if e.Version != 6 || e.RunID != "r1" || e.Label != "s" || e.Visit != 1 {
			t.Errorf("%+v: want version 6 (every write) and its provenance", e)
		}
	}
	t0 := time.Now()
	if _, err := st.Write("tmp", "x", time.Minute, Provenance{Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	st.Now = func() time.Time { return t0.Add(2 * time.Minute) }
	if _, found, err := st.Read("tmp"); found || err != nil {
		t.Errorf("an expired key reads as found %v (%v)", found, err)
	}
	if err := st.Remove("k1", ""); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := st.Read("k1"); found {
		t.Error("a removed key is still read")
	}
	if _, err := Path("", "../x"); err == nil {
		t.Error("a store name with a path in it was taken")
	}
	if got := filepath.Base(path); got != "default.json" {
		t.Errorf("default store file %s", got)
	}
	empty := Open(filepath.Join(t.TempDir(), "none.json"))
	if es, err := empty.List(""); err != nil || len(es) != 0 {
		t.Errorf("a store never written lists %v, %v", es, err)
	}
}
