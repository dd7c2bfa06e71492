//go:build unix

package boardlock

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// A second taker of a held lock is refused with the holder named (as the
// holder last wrote itself), and takes it once the holder lets go.
func TestTryLockRefusesWhileHeld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		holder Owner
		socket string // written by SetOwner after taking it
		want   string // the refusal's message, path aside
	}{
		{"run", Owner{Kind: OwnerRun}, "/tmp/run.sock", " is in use by process %d (run)"},
		{"cli", Owner{Kind: OwnerCLI}, "", " is in use by process %d (cli)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/blackboard.json"
			held, err := TryLock(path, tc.holder)
			if err != nil {
				t.Fatal(err)
			}
			if tc.socket != "" {
				o := tc.holder
				o.Socket = tc.socket
				if err := held.SetOwner(o); err != nil {
					t.Fatal(err)
				}
			}
			_, err = TryLock(path, Owner{Kind: OwnerCLI})
			var owned *OwnedError
			if !errors.As(err, &owned) {
				t.Fatalf("second TryLock: %v, want an *OwnedError", err)
			}
			if owned.Owner.Kind != tc.holder.Kind || owned.Owner.PID != os.Getpid() || owned.Owner.Socket != tc.socket || owned.Owner.Since.IsZero() {
				t.Errorf("holder %+v, want kind %s, pid %d, socket %q and a time", owned.Owner, tc.holder.Kind, os.Getpid(), tc.socket)
			}
			if want := path + fmt.Sprintf(tc.want, os.Getpid()); err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			if err := held.Unlock(); err != nil {
				t.Fatal(err)
			}
			again, err := TryLock(path, Owner{Kind: OwnerCLI})
			if err != nil {
				t.Fatalf("TryLock after Unlock: %v", err)
			}
			defer again.Unlock()
			if o, err := ReadOwner(path); err != nil || o.Kind != OwnerCLI || o.Socket != "" {
				t.Errorf("ReadOwner = %+v, %v; want the new cli holder, no socket", o, err)
			}
			if fi, err := os.Stat(LockPath(path)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("lock file: %v %v, want mode 0600", fi.Mode(), err)
			}
		})
	}
}

// Held tells a lock held now from one let go (whose owner record stays),
// and writes nothing to the lock file.
func TestHeld(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	if Held(path) {
		t.Error("no lock file: held")
	}
	l, err := TryLock(path, Owner{Kind: OwnerRun})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(LockPath(path))
	for _, step := range []struct {
		name string
		do   func()
		want bool
	}{
		{"taken", func() {}, true},
		{"let go", func() { l.Unlock() }, false},
	} {
		step.do()
		if got := Held(path); got != step.want {
			t.Errorf("%s: Held = %v, want %v", step.name, got, step.want)
		}
		if after, _ := os.ReadFile(LockPath(path)); string(after) != string(before) {
			t.Errorf("%s: Held changed the lock file: %q, was %q", step.name, after, before)
		}
	}
}

// A rewritten owner record keeps when the lock was taken (readers take a
// later one for a resume that took a stopped run), unless it says.
func TestSetOwnerKeepsSince(t *testing.T) {
	taken := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		since time.Time // given to SetOwner
		want  time.Time
	}{
		{"none given: when it was taken", time.Time{}, taken},
		{"given", taken.Add(time.Hour), taken.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/blackboard.json"
			l, err := TryLock(path, Owner{Kind: OwnerRun, Since: taken})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Unlock()
			if err := l.SetOwner(Owner{Kind: OwnerRun, Socket: "/tmp/s", Since: tc.since}); err != nil {
				t.Fatal(err)
			}
			o, err := ReadOwner(path)
			if err != nil || !o.Since.Equal(tc.want) || o.Socket != "/tmp/s" {
				t.Fatalf("owner %+v, %v; want since %v", o, err, tc.want)
			}
		})
	}
}
