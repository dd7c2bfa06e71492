//go:build !linux

package proc

import "os/exec"

// Without /proc, only the process group is known: kill(2) decides whether
// it runs, and processes that left it cannot be found.
func scan(pgid int, token string, since uint64) (groupRunning bool, escaped []int, ok bool) {
	return false, nil, false
}

func startTime(pid int) uint64 { return 0 }

func reapOrphans() {}

// BecomeSubreaper is Linux only; elsewhere it does nothing.
func BecomeSubreaper() error { return nil }

// Without cgroups and pidfds, the process group is all there is.
type stepCgroup struct{}

func newStepCgroup(string) (*stepCgroup, string) { return nil, "no cgroups on this system" }
func (*stepCgroup) populated() bool              { return false }
func (*stepCgroup) procs() []int                 { return nil }
func (*stepCgroup) kill() error                  { return nil }
func (*stepCgroup) close()                       {}
func (*stepCgroup) started()                     {}
func (*stepCgroup) open() bool                   { return false }
func (*stepCgroup) discard()                     {}
func (*stepCgroup) path() string                 { return "" }
func runCgroupPath() string                      { return "" }
func removeStepsCgroups() bool                   { return true }

func intoCgroup(cmd *exec.Cmd, cg *stepCgroup) {}

type pidfds map[int]int

func (pidfds) track(int)     {}
func (pidfds) pending() bool { return false }
func (pidfds) close()        {}

func reapGroup(int) {}

func escapesPossible() bool { return true }
