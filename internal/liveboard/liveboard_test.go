package liveboard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
)

// serve creates a board at dir/name, takes its lock as a run would, and
// serves it.
func serve(t testing.TB, dir, name string) (*board.Board, *Server, string) {
	t.Helper()
	path := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(path), 0o755)
	lock, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerRun})
	if err != nil {
		t.Fatal(err)
	}
	b, err := board.Create(path, board.Run{ID: "r1", Status: board.StatusRunning}, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Serve(b)
	if err != nil {
		t.Fatal(err)
	}
	lock.SetOwner(boardlock.Owner{Kind: boardlock.OwnerRun, Socket: s.Socket})
	t.Cleanup(func() {
		s.Close()
		b.Close()
		lock.Unlock()
	})
	return b, s, path
}

func ptr(n int64) *int64 { return &n }

func TestServeReadWrite(t *testing.T) {
	b, _, path := serve(t, t.TempDir(), "blackboard.json")
	b.SetPerms(map[string]board.Perms{"coder": {Read: []string{"spec"}, Write: []string{"result:*"}}})
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, ok := a.(*Client); !ok {
		t.Fatalf("a live board is reached through %T, want its socket", a)
	}
	e, err := a.Write(WriteRequest{Key: "task:a", Value: map[string]any{"n": 1}, TTL: 60, Agent: "boss"})
	if err != nil || e.Version != 1 || e.Topic != "task" || e.Author != "boss" || *e.TTL != 60 {
		t.Fatalf("put: %+v %v", e, err)
	}
	if got, ok := b.Get("task:a"); !ok || got.Meta["via"] != "socket" {
		t.Fatalf("the owner's board has %+v %v", got, ok)
	}
	tests := []struct {
		name string
		q    WriteRequest
		is   error
	}{
		{"stale compare-and-set", WriteRequest{Key: "task:a", Value: 2, ExpectVersion: ptr(0)}, board.ErrVersion},
		{"outside the write patterns", WriteRequest{Key: "spec", Value: 2, Agent: "coder"}, board.ErrDenied},
		{"delete of an absent key", WriteRequest{Key: "nope", Delete: true}, board.ErrAbsent},
		{"empty key", WriteRequest{Key: " ", Value: 1}, nil},
		{"negative ttl", WriteRequest{Key: "k", Value: 1, TTL: -1}, nil},
	}
	for _, tt := range tests {
		_, err := a.Write(tt.q)
		if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.is)
		}
	}
	if _, err := a.Write(WriteRequest{Key: "result:x", Value: "done", Agent: "coder", ExpectVersion: ptr(0)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Read("coder", "task:a"); !errors.Is(err, board.ErrDenied) {
		t.Fatalf("read outside the read patterns: %v", err)
	}
	if e, ok, err := a.Read("", "task:a"); !ok || err != nil || e.Content.(map[string]any)["n"] != 1.0 {
		t.Fatalf("read: %+v %v %v", e, ok, err)
	}
	if _, ok, err := a.Read("", "missing"); ok || err != nil {
		t.Fatalf("read of a missing key: %v %v", ok, err)
	}
	live, _ := a.Live("", "")
	if len(live) != 2 || live[0].Key != "result:x" || live[1].Key != "task:a" {
		t.Fatalf("live %+v", live)
	}
	whole, err := a.Board()
	if err != nil || whole.Len() != 2 || whole.Run().ID != "r1" {
		t.Fatalf("board: %v %v", whole, err)
	}
}

// A reader that read the key before writing it does not conflict; one
// that did not, does. The owner remembers socket readers by agent.
func TestConflictThroughSocket(t *testing.T) {
	b, _, path := serve(t, t.TempDir(), "blackboard.json")
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Write(WriteRequest{Key: "k", Value: "x", Agent: "alice"})
	a.Read("bob", "k")
	a.Write(WriteRequest{Key: "k", Value: "y", Agent: "bob"})
	if n := len(b.Conflicts("k")); n != 0 {
		t.Fatalf("%d conflicts after a read", n)
	}
	a.Write(WriteRequest{Key: "k", Value: "z", Agent: "carol"})
	if n := len(b.Conflicts("k")); n != 1 {
		t.Fatalf("%d conflicts for an unread overwrite, want 1", n)
	}
}

// A blackboard path too long for a Unix socket is served from a short
// private path, recorded in the lock file.
func TestLongPathSocket(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, strings.Repeat("d", 60), strings.Repeat("e", 60))
	_, s, path := serve(t, long, "blackboard.json")
	if len(s.Socket) > maxSocketPath || strings.HasPrefix(s.Socket, long) {
		t.Fatalf("socket %s", s.Socket)
	}
	if o, _ := boardlock.ReadOwner(path); o.Socket != s.Socket {
		t.Fatalf("lock file says %+v", o)
	}
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*Client); !ok {
		t.Fatalf("reached through %T", a)
	}
	a.Close()
	s.Close()
	if _, err := os.Stat(filepath.Dir(s.Socket)); !os.IsNotExist(err) {
		t.Fatalf("the private socket dir outlived the server: %v", err)
	}
}

// Without an owner, Open takes the lock; a second Open waits for it.
func TestOpenWithoutOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blackboard.json")
	b, _ := board.Create(path, board.Run{ID: "r"}, board.Options{})
	b.Close()
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*local); !ok {
		t.Fatalf("got %T", a)
	}
	if _, err := Open(path, Options{Wait: 50 * time.Millisecond}); err == nil {
		t.Fatal("two holders of the lock at once")
	} else if o := new(boardlock.OwnedError); !errors.As(err, &o) || o.Owner.Kind != boardlock.OwnerCLI || o.Owner.PID != os.Getpid() {
		t.Fatalf("second open: %v", err)
	}
	done := make(chan error)
	go func() {
		a2, err := Open(path, Options{})
		if err == nil {
			_, err = a2.Write(WriteRequest{Key: "second", Value: 2})
			a2.Close()
		}
		done <- err
	}()
	time.Sleep(30 * time.Millisecond)
	a.Write(WriteRequest{Key: "first", Value: 1})
	a.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l, _ := board.Load(path)
	if l.Len() != 2 {
		t.Fatalf("%d entries", l.Len())
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.json"), Options{}); !os.IsNotExist(err) {
		t.Fatalf("open of a missing file: %v", err)
	}
}

// Concurrent clients and watchers on one owner (run with -race): no write
// lost, every watcher sees every matching change once, in order.
func TestConcurrentClientsAndWatchers(t *testing.T) {
	b, s, path := serve(t, t.TempDir(), "blackboard.json")
	const writers, n = 8, 40
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type seen struct {
		mu   sync.Mutex
		seqs []int64
	}
	watchers := make([]*seen, 3)
	var wwg sync.WaitGroup
	ready := make(chan struct{}, len(watchers))
	for i := range watchers {
		watchers[i] = &seen{}
		c, err := Dial(s.Socket, path)
		if err != nil {
			t.Fatal(err)
		}
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			ready <- struct{}{}
			c.Watch(ctx, Filter{Prefix: "k", After: 0}, func(ch Change) error {
				w := watchers[i]
				w.mu.Lock()
				w.seqs = append(w.seqs, ch.Seq)
				full := len(w.seqs) == writers*n
				w.mu.Unlock()
				if full {
					return errors.New("all seen")
				}
				return nil
			})
		}()
	}
	for range watchers {
		<-ready
	}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Dial(s.Socket, path)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for i := 0; i < n; i++ {
				if _, err := c.Write(WriteRequest{Key: fmt.Sprintf("k%d-%d", w, i), Value: i, Agent: fmt.Sprint("w", w)}); err != nil {
					t.Error(err)
				}
				b.Append(board.Entry{Section: "noise", Content: i}) // the owner writes too
			}
		}()
	}
	wg.Wait()
	wwg.Wait()
	for i, w := range watchers {
		if len(w.seqs) != writers*n {
			t.Fatalf("watcher %d saw %d changes, want %d", i, len(w.seqs), writers*n)
		}
		for j := 1; j < len(w.seqs); j++ {
			if w.seqs[j] <= w.seqs[j-1] {
				t.Fatalf("watcher %d: seq %d after %d", i, w.seqs[j], w.seqs[j-1])
			}
		}
	}
	if got := len(b.Keys("k")); got != writers*n {
		t.Fatalf("%d keys, want %d", got, writers*n)
	}
}

// Closing the server ends its watch streams: a watcher learns the run
// ended.
func TestCloseEndsWatch(t *testing.T) {
	_, s, path := serve(t, t.TempDir(), "blackboard.json")
	c, err := Dial(s.Socket, path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- c.Watch(context.Background(), Filter{After: -1}, func(Change) error { return nil }) }()
	time.Sleep(50 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch did not end with the server")
	}
}
