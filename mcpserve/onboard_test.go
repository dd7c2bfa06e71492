package mcpserve

import (
	"path/filepath"
	"testing"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/liveboard"
	"github.com/planrunner/runner/runs"
)

// A run that ends between the tool's open of its board (through its
// socket) and the tool's request takes the socket away; the request,
// which never reached it, is made again on the file the run saved,
// rather than failing with "dial unix …: no such file".
func TestARunEndingMidRequestIsReadFromItsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "blackboard.json")
	b, err := board.Create(path, board.Run{ID: "R1", Status: board.StatusRunning}, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(board.WriteOp{Key: "k", Value: "v", Author: "a", Role: "user", ExpectVersion: -1}); err != nil {
		t.Fatal(err)
	}
	lock, err := board.TryLock(path, board.Owner{Kind: board.OwnerRun})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := liveboard.Serve(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.SetOwner(board.Owner{Kind: board.OwnerRun, Socket: srv.Socket}); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Dir: dir})
	defer s.Close()
	var through []bool
	err = s.onBoard(path, true, func(a liveboard.Access) error {
		through = append(through, runs.Live(a))
		// the run ends now
		srv.Close()
		b.Close()
		lock.Unlock()
		e, ok, err := a.Read("", "k")
		through = append(through, runs.Live(a))
		if err == nil && (!ok || e.Content != "v") {
			t.Errorf("read %v %+v", ok, e)
		}
		return err
	})
	if err != nil {
		t.Fatalf("the read failed: %v", err)
	}
	if len(through) != 2 || !through[0] || through[1] {
		t.Errorf("opened through the socket, then the file: want [true false], got %v", through)
	}
}
