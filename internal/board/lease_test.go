package board

import (
	"errors"
	"testing"
	"time"
)

func TestLease(t *testing.T) {
	t0 := time.Date(2026, 2, 4, 10, 0, 0, 0, time.UTC)
	lock := func(owner string, ttl time.Duration) WriteOp {
		return WriteOp{Key: "lock:db", Author: owner, Lease: LeaseLock, TTL: ttl}
	}
	unlock := func(owner string) WriteOp {
		return WriteOp{Key: "lock:db", Author: owner, Lease: LeaseUnlock}
	}
	type step struct {
		at      time.Duration // after t0
		op      WriteOp
		wantErr error // nil: succeeds
		holder  string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"free key is taken", []step{{0, lock("a", time.Minute), nil, "a"}}},
		{"second owner refused while held", []step{
			{0, lock("a", time.Minute), nil, "a"},
			{30 * time.Second, lock("b", time.Minute), ErrHeld, "a"},
		}},
		{"renewal by the holder extends it", []step{
			{0, lock("a", time.Minute), nil, "a"},
			{50 * time.Second, lock("a", time.Minute), nil, "a"},
			{100 * time.Second, lock("b", time.Minute), ErrHeld, "a"},
		}},
		{"expired lease is taken by another", []step{
			{0, lock("a", time.Minute), nil, "a"},
			{time.Minute, lock("b", time.Minute), nil, "b"},
		}},
		{"owner given apart from the author", []step{
			{0, WriteOp{Key: "lock:db", Author: "runner", Owner: "job-7", Lease: LeaseLock, TTL: time.Minute}, nil, "job-7"},
			{time.Second, lock("runner", time.Minute), ErrHeld, "job-7"},
		}},
		{"unlock frees it", []step{
			{0, lock("a", time.Minute), nil, "a"},
			{time.Second, unlock("a"), nil, ""},
			{2 * time.Second, lock("b", time.Minute), nil, "b"},
		}},
		{"unlock by another owner refused", []step{
			{0, lock("a", time.Minute), nil, "a"},
			{time.Second, unlock("b"), ErrHeld, "a"},
		}},
		{"unlock of an expired lease says so", []step{
			{0, lock("a", time.Minute), nil, "a"},
			{2 * time.Minute, unlock("a"), ErrAbsent, ""},
		}},
		{"lock without a ttl refused", []step{{0, lock("a", 0), errAny, ""}}},
		{"lock without an owner refused", []step{{0, lock("", time.Minute), errAny, ""}}},
		{"a plain value is not taken", []step{
			{0, WriteOp{Key: "lock:db", Author: "a", Value: "mine", ExpectVersion: -1}, nil, ""},
			{time.Second, lock("b", time.Minute), ErrHeld, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(Run{})
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				b.SetClock(func() time.Time { return now })
				_, err := b.Write(s.op)
				switch {
				case s.wantErr == nil && err != nil:
					t.Fatalf("step %d: %v", i, err)
				case s.wantErr == errAny && err == nil, s.wantErr != nil && s.wantErr != errAny && !errors.Is(err, s.wantErr):
					t.Fatalf("step %d: err %v, want %v", i, err, s.wantErr)
				}
				got := ""
				if e, ok := b.Get("lock:db"); ok {
					got, _ = LeaseOwner(e)
				}
				if got != s.holder {
					t.Fatalf("step %d: held by %q, want %q", i, got, s.holder)
				}
			}
		})
	}
}

var errAny = errors.New("any error")

// A step's lease is decided when its record is committed, under the
// board's lock: the check a step made while it ran may be stale by then.
func TestLeaseInFinishStep(t *testing.T) {
	b := New(Run{})
	op := &WriteOp{Key: "lock:db", Author: "a", Lease: LeaseLock, TTL: time.Minute}
	if err := b.FinishStep(StepRecord{Label: "take", Visit: 1}, Entry{Section: "steps"}, op); err != nil {
		t.Fatal(err)
	}
	if op.Lease != LeaseLock {
		t.Errorf("FinishStep changed the caller's op: lease %q", op.Lease)
	}
	other := &WriteOp{Key: "lock:db", Author: "b", Lease: LeaseLock, TTL: time.Minute}
	err := b.FinishStep(StepRecord{Label: "take", Visit: 2}, Entry{Section: "steps"}, other)
	var held *HeldError
	if !errors.As(err, &held) || held.Owner != "a" {
		t.Fatalf("second owner's step: err %v, want held by a", err)
	}
	if n := len(b.Steps()); n != 1 {
		t.Errorf("the refused step was recorded: %d steps", n)
	}
}

func TestHeartbeat(t *testing.T) {
	t0 := time.Date(2026, 2, 4, 10, 0, 0, 0, time.UTC)
	ttl := 30.0
	tests := []struct {
		name string
		e    Entry
		at   time.Duration
		want string
	}{
		{"not a signal", Entry{Key: "task:x", TS: t0}, 0, ""},
		{"fresh write", Entry{Key: "signal:a", TS: t0, Content: "up"}, 10 * time.Second, "alive"},
		{"written long ago", Entry{Key: "signal:a", TS: t0, Content: "up"}, 2 * time.Minute, "stale"},
		{"last_heartbeat older than the write", Entry{Key: "signal:a", TS: t0,
			Content: map[string]any{"last_heartbeat": t0.Add(-2 * time.Minute).Format(time.RFC3339)}}, 0, "stale"},
		{"ttl is the window", Entry{Key: "signal:a", TS: t0, TTL: &ttl}, 40 * time.Second, "stale"},
		{"stale_after_s is the window", Entry{Key: "signal:a", TS: t0,
			Content: map[string]any{"stale_after_s": 300.0}}, 4 * time.Minute, "alive"},
	}
	for _, tt := range tests {
		if got := HeartbeatState(tt.e, t0.Add(tt.at)); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
