package runs

import (
	"path/filepath"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
)

// A run that ends between a caller's open of its board (through its
// socket) and the caller's request takes the socket away. The request,
// which never reached it, is made again on the file the run saved, for
// every kind of request `runner board` and the MCP server make, rather
// than failing with "dial unix …: no such file or directory".
func TestARunEndingMidRequestIsReachedOnItsFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readOnly bool
		do       func(t *testing.T, a liveboard.Access)
	}{
		{"read", true, func(t *testing.T, a liveboard.Access) {
			e, ok, err := a.Read("", "k")
			if err != nil || !ok || e.Content != "v" {
				t.Fatalf("read: %v %v %+v", err, ok, e)
			}
		}},
		{"list", true, func(t *testing.T, a liveboard.Access) {
			es, err := a.Live("", "")
			if err != nil || len(es) != 1 {
				t.Fatalf("list: %v %d entries", err, len(es))
			}
		}},
		{"board", true, func(t *testing.T, a liveboard.Access) {
			b, err := a.Board()
			if err != nil || b.Run().ID != "R1" {
				t.Fatalf("board: %v", err)
			}
		}},
		{"write", false, func(t *testing.T, a liveboard.Access) {
			e, err := a.Write(liveboard.WriteRequest{Key: "k2", Value: "w"})
			if err != nil || e.Version != 1 {
				t.Fatalf("write: %v %+v", err, e)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "blackboard.json")
			b, err := board.Create(path, board.Run{ID: "R1", Status: board.StatusRunning}, board.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Write(board.WriteOp{Key: "k", Value: "v", Author: "a", Role: "user", ExpectVersion: -1}); err != nil {
				t.Fatal(err)
			}
			lock, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerRun})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := liveboard.Serve(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := lock.SetOwner(boardlock.Owner{Kind: boardlock.OwnerRun, Socket: srv.Socket}); err != nil {
				t.Fatal(err)
			}
			a, _, err := OpenBoard(path, BoardOptions{ReadOnly: tc.readOnly})
			if err != nil {
				t.Fatal(err)
			}
			if !Live(a) {
				t.Fatal("opened on the file, not through the run's socket")
			}
			// The run ends now: its socket goes, its file is saved.
			srv.Close()
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			if err := lock.Unlock(); err != nil {
				t.Fatal(err)
			}
			tc.do(t, a)
			if Live(a) {
				t.Error("still counted as live after the run ended")
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.readOnly {
				return
			}
			saved, err := board.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range saved.Entries() {
				if e.Key == "k2" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("the write is in the saved file %d times, want once", n)
			}
		})
	}
}
