package liveboard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// Leases through a live run's socket: a refusal travels as "held" (so
// errors.Is works in the client), and owners that wait take turns, never
// two at once.
func TestServeLease(t *testing.T) {
	b, _, path := serve(t, t.TempDir(), "blackboard.json")
	open := func() (Access, error) { return Open(path, Options{}) }
	if _, err := Lock(context.Background(), open, WriteRequest{Key: "lock:db", TTL: 60, Owner: "a"}, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		q    WriteRequest
		is   error
	}{
		{"another owner's lock", WriteRequest{Key: "lock:db", TTL: 60, Owner: "b", Lease: board.LeaseLock}, board.ErrHeld},
		{"another owner's unlock", WriteRequest{Key: "lock:db", Owner: "b", Lease: board.LeaseUnlock}, board.ErrHeld},
		{"unlock of a free key", WriteRequest{Key: "lock:free", Owner: "a", Lease: board.LeaseUnlock}, board.ErrAbsent},
		{"lock without a ttl", WriteRequest{Key: "lock:x", Owner: "a", Lease: board.LeaseLock}, nil},
		{"lock with expect_version", WriteRequest{Key: "lock:x", TTL: 1, Owner: "a", Lease: board.LeaseLock, ExpectVersion: ptr(0)}, nil},
		{"owner without a lease", WriteRequest{Key: "k", Value: 1, Owner: "a"}, nil},
		{"unknown lease op", WriteRequest{Key: "k", TTL: 1, Owner: "a", Lease: "grab"}, nil},
	}
	a, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, tt := range tests {
		_, err := a.Write(tt.q)
		if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.is)
		}
	}
	if _, err := a.Write(WriteRequest{Key: "lock:db", Owner: "a", Lease: board.LeaseUnlock}); err != nil {
		t.Fatal(err)
	}

	// Owners contend; each holds the lease for a while, then releases it.
	var mu sync.Mutex
	holding, most := 0, 0
	var wg sync.WaitGroup
	for _, owner := range []string{"p1", "p2", "p3", "p4"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if _, err := Lock(context.Background(), open, WriteRequest{Key: "lock:db", TTL: 30, Owner: owner}, 30*time.Second); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				holding++
				most = max(most, holding)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
				mu.Lock()
				holding--
				mu.Unlock()
				c, err := open()
				if err == nil {
					_, err = c.Write(WriteRequest{Key: "lock:db", Owner: owner, Lease: board.LeaseUnlock})
					c.Close()
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d owners held the lease at once", most)
	}
	if _, ok := b.Get("lock:db"); ok {
		t.Error("the lease is still held after every owner released it")
	}
}
