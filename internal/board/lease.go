package board

import (
	"errors"
	"fmt"
	"time"
)

// Leases: a key held by one owner for a while (seed 001's lock: keys). A
// lease is a keyed entry with a TTL whose value names its owner and whose
// meta.lease says it is one; taking it is a compare-and-set on the key's
// live version under the board's lock, so two owners never both succeed,
// and a holder that dies stops renewing, so its lease expires and the key
// is free again. Nothing else about the key changes: it reads, lists,
// watches and replays as any other key.

// ErrHeld is returned when a lease is held by another owner.
var ErrHeld = errors.New("held by another owner")

// Lease operations (WriteOp.Lease).
const (
	LeaseLock   = "lock"
	LeaseUnlock = "unlock"
)

// HeldError says who holds a lease and until when.
type HeldError struct {
	Key, Owner string
	Until      time.Time // zero: a value that is not a lease, with no TTL
	Op         string    // the refused operation
	NotLease   bool      // the key holds a plain value, not a lease
}

func (e *HeldError) Error() string {
	if e.NotLease {
		return fmt.Sprintf("board: %s %q: the key holds a value written by %s, not a lease", e.Op, e.Key, e.Owner)
	}
	return fmt.Sprintf("board: %s %q: held by %s until %s", e.Op, e.Key, e.Owner, e.Until.UTC().Format(time.RFC3339Nano))
}

func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// LeaseOwner is the owner of the lease e holds, or false when e is not a
// lease.
func LeaseOwner(e Entry) (string, bool) {
	if l, _ := e.Meta["lease"].(bool); !l {
		return "", false
	}
	m, _ := e.Content.(map[string]any)
	o, ok := m["owner"].(string)
	return o, ok
}

// CheckLease refuses a lease operation no board takes: an unknown one, a
// lock without a TTL (a dead holder would keep it for good), one without
// an owner.
func (op *WriteOp) CheckLease() error {
	switch op.Lease {
	case "":
		return nil
	case LeaseLock:
		if op.TTL <= 0 {
			return fmt.Errorf("board: lock %q needs a ttl: a lease held by a process that died would never be released", op.Key)
		}
	case LeaseUnlock:
	default:
		return fmt.Errorf("board: lease operation %q: want lock or unlock", op.Lease)
	}
	if op.owner() == "" {
		return fmt.Errorf("board: %s %q needs an owner", op.Lease, op.Key)
	}
	if op.Delete || op.Handoff {
		return fmt.Errorf("board: %s %q: a lease operation is not also a delete or a hand-off", op.Lease, op.Key)
	}
	return nil
}

func (op *WriteOp) owner() string {
	if op.Owner != "" {
		return op.Owner
	}
	return op.Author
}

// leaseLocked turns a lease operation into the compare-and-set write (a
// lock or its renewal) or delete (an unlock) it makes, or refuses it with
// a *HeldError while another owner holds the key. The version it
// expects is the one it finds: op.ExpectVersion is set, not read.
func (b *Board) leaseLocked(op *WriteOp, now time.Time) error {
	if op.Lease == "" {
		return nil
	}
	if err := op.CheckLease(); err != nil {
		return err
	}
	owner := op.owner()
	var cur *Entry
	if p := b.pendingKeyLocked(op.Key); p != nil {
		cur = p
	} else if ks := b.keys[op.Key]; ks != nil {
		e := b.entries.at(ks.latest).loaded(ks.latest)
		cur = &e
	}
	live := cur != nil && !cur.Deleted && !cur.Expired(now)
	if live {
		held, isLease := LeaseOwner(*cur)
		if !isLease {
			return &HeldError{Key: op.Key, Owner: cur.Author, Op: op.Lease, NotLease: true}
		}
		if held != owner {
			until := time.Time{}
			if cur.TTL != nil {
				until = cur.TS.Add(time.Duration(*cur.TTL * float64(time.Second)))
			}
			return &HeldError{Key: op.Key, Owner: held, Until: until, Op: op.Lease}
		}
	}
	meta := make(map[string]any, len(op.Meta)+1)
	for k, v := range op.Meta {
		meta[k] = v
	}
	meta["lease"] = true
	op.Meta = meta
	if op.Lease == LeaseUnlock {
		if !live {
			return fmt.Errorf("board: unlock %q: %s holds no lease on it: %w", op.Key, owner, ErrAbsent)
		}
		op.Delete, op.Value, op.TTL = true, nil, 0
	} else {
		op.Value = map[string]any{"owner": owner}
	}
	op.ExpectVersion = 0
	if live {
		op.ExpectVersion = cur.Version
	}
	op.Lease = ""
	return nil
}
