package board

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// A large board read to resume leaves its entries' lines in its file:
// they are read back, as they were, once the file has been replaced by
// saves; a line written into in the meantime is an error, never an
// entry's content or a saved line. A small file's lines are kept in
// memory.
func TestEntryLinesReadBackFromTheFile(t *testing.T) {
	write := func(path string, n int) []Entry {
		b, err := Create(path, Run{ID: "r", Status: StatusRunning, PlanSource: "steps: []"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := b.Write(WriteOp{Key: fmt.Sprint("k", i), Value: fmt.Sprintf("value %06d %s", i, strings.Repeat("x", 200)), Author: "a", ExpectVersion: -1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Save(); err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		return b.Entries()
	}
	// scribble writes into the file, in place, over entry k's value.
	scribble := func(path string, k int) {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		data, _ := os.ReadFile(path)
		at := bytes.Index(data, fmt.Appendf(nil, "value %06d", k))
		if at < 0 {
			t.Fatalf("no entry %d in the file", k)
		}
		if _, err := f.WriteAt([]byte("VALUE"), int64(at)); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	big := dir + "/big.json"
	want := write(big, 6000)
	saved, _ := os.ReadFile(big)
	if len(saved) < settleMin {
		t.Fatalf("the file is %d bytes, not large", len(saved))
	}
	r, err := LoadToResume(big)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk := r.entries.at(0).lazy().src.f != nil; onDisk != (runtime.GOOS != "windows") {
		t.Errorf("lines left in the file: %v", onDisk)
	}
	for range 2 { // the file replaced each time
		if again := savedAs(t, r, big); again != string(saved) {
			t.Fatalf("saved again, the file differs (%d bytes, %d read)", len(again), len(saved))
		}
		sameEntries(t, "after the file was replaced", r.Entries(), want)
	}

	r, err = LoadToResume(big)
	if err != nil {
		t.Fatal(err)
	}
	scribble(big, 4321)
	scribbled, _ := os.ReadFile(big)
	if runtime.GOOS != "windows" {
		e := r.Entries()[4321]
		if s, _ := e.Content.(string); !strings.Contains(s, "changed on disk") || !strings.Contains(s, "entry seq 4322") {
			t.Errorf("entry 4322, written into in its file, reads %q", s)
		}
		if e := r.Entries()[4320]; e.Content != want[4320].Content {
			t.Errorf("entry 4321 reads %q", e.Content)
		}
		err := r.Attach(big, Options{})
		if err == nil {
			err = r.Save()
		}
		if err == nil || !strings.Contains(err.Error(), big+" changed on disk") {
			t.Errorf("saving a board whose file was written into: %v", err)
		}
		if now, _ := os.ReadFile(big); !bytes.Equal(now, scribbled) {
			t.Errorf("the failed save replaced the file")
		}
		r.Close()
	}

	small := dir + "/small.json"
	want = write(small, 20)
	r, err = LoadToResume(small)
	if err != nil {
		t.Fatal(err)
	}
	scribble(small, 7)
	sameEntries(t, "a small file written into", r.Entries(), want)
}
