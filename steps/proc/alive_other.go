//go:build !linux

package proc

// Without /proc, only the process group is known: kill(2) decides whether
// it runs, and processes that left it cannot be found.
func scan(pgid int, token string, since uint64) (groupRunning bool, escaped []int, ok bool) {
	return false, nil, false
}

func startTime(pid int) uint64 { return 0 }

func reapOrphans() {}

// BecomeSubreaper is Linux only; elsewhere it does nothing.
func BecomeSubreaper() error { return nil }
