package steps

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

func TestBoardStepLease(t *testing.T) {
	tests := []struct {
		name    string
		steps   string
		setup   func(b *board.Board)
		wantErr string // in the run's error
		holder  string // the lease's owner after the run ("": free)
	}{
		{"lock then renew", `
  - {label: take, type: board, op: lock, key: "lock:db", ttl: 1m, owner: deploy}
  - {label: again, type: board, op: lock, key: "lock:db", ttl: 1m, owner: deploy}`, nil, "", "deploy"},
		{"another owner refused", `
  - {label: take, type: board, op: lock, key: "lock:db", ttl: 1m, owner: a}
  - {label: steal, type: board, op: lock, key: "lock:db", ttl: 1m, owner: b}`, nil, "held by a", "a"},
		{"lock, unlock, lock by another", `
  - {label: take, type: board, op: lock, key: "lock:db", ttl: 1m, owner: a}
  - {label: give, type: board, op: unlock, key: "lock:db", owner: a}
  - {label: next, type: board, op: lock, key: "lock:db", ttl: 1m, owner: b}`, nil, "", "b"},
		{"unlock by another owner refused", `
  - {label: take, type: board, op: lock, key: "lock:db", ttl: 1m, owner: a}
  - {label: give, type: board, op: unlock, key: "lock:db", owner: b}`, nil, "held by a", "a"},
		{"owner defaults to the author", `
  - {label: take, type: board, op: lock, key: "lock:db", ttl: 1m, author: builder}`, nil, "", "builder"},
		{"waits for a lease that expires", `
  - {label: take, type: board, op: lock, key: "lock:db", ttl: 1m, owner: b, wait: 5s}`, func(b *board.Board) {
			b.Write(board.WriteOp{Key: "lock:db", Author: "a", Lease: board.LeaseLock, TTL: 300 * time.Millisecond})
		}, "", "b"},
		{"wait runs out", `
  - {label: take, type: board, op: lock, key: "lock:db", ttl: 1m, owner: b, wait: 100ms}`, func(b *board.Board) {
			b.Write(board.WriteOp{Key: "lock:db", Author: "a", Lease: board.LeaseLock, TTL: time.Minute})
		}, "held by a", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nname: lease\nsteps:" + tt.steps + "\n"
			prog, err := engine.Compile("plan.yaml", []byte(src), Registry())
			if err != nil {
				t.Fatal(err)
			}
			b := board.New(board.Run{ID: "run1"})
			if tt.setup != nil {
				tt.setup(b)
			}
			r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: t.TempDir()}
			err = r.Run(context.Background())
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("run: %v, want error %q", err, tt.wantErr)
			}
			got := ""
			if e, ok := b.Get("lock:db"); ok {
				got, _ = board.LeaseOwner(e)
			}
			if got != tt.holder {
				t.Errorf("held by %q, want %q", got, tt.holder)
			}
		})
	}
}

func TestBoardStepLeaseChecks(t *testing.T) {
	tests := []struct{ step, want string }{
		{`{label: x, type: board, op: lock, key: k}`, "needs a ttl"},
		{`{label: x, type: board, op: lock, key: k, ttl: 1m, value: 1}`, "value is only for op: write"},
		{`{label: x, type: board, op: lock, key: k, ttl: 1m, expect_version: 1}`, "expect_version"},
		{`{label: x, type: board, op: unlock, key: k, wait: 1s}`, "wait is for op: lock"},
		{`{label: x, type: board, op: write, key: k, value: 1, owner: a}`, "owner is for op: lock and unlock"},
	}
	for _, tt := range tests {
		_, err := engine.Compile("plan.yaml", []byte("version: 1\nname: c\nsteps:\n  - "+tt.step+"\n"), Registry())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.step, err, tt.want)
		}
	}
}
