package board

import (
	"os"
	"testing"
)

// Attach goes on with a loaded run as Open does: after a journal with
// records the file does not hold, and after a torn last line, every
// record is kept and the new ones follow.
func TestAttachGoesOnAfterTheJournal(t *testing.T) {
	for _, torn := range []bool{false, true} {
		path := t.TempDir() + "/blackboard.json"
		b, _ := Create(path, Run{ID: "r"}, Options{})
		fill(t, b, 3) // in the journal only
		b.Close()
		if torn {
			f, _ := os.OpenFile(JournalPath(path), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"n":99,"entry":{"seq":4,"sect`)
			f.Close()
		}
		loaded, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := loaded.Attach(path, Options{}); err != nil {
			t.Fatal(err)
		}
		if _, err := loaded.Append(Entry{Section: "s", Content: "after"}); err != nil {
			t.Fatal(err)
		}
		loaded.Close()
		again, err := Load(path)
		if err != nil || again.Len() != 4 {
			t.Fatalf("torn %v: after attach and a write: %v, %d entries, want 4", torn, err, again.Len())
		}
	}
}
