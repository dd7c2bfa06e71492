//go:build unix

package proc

import "golang.org/x/sys/unix"

// maxRunning is how many steps' processes may run at once: a running step
// holds descriptors in runner (the read ends of its two pipes and its
// process's pidfd; a sandboxed one a few more), so a step is given four,
// out of what runner may open less an eighth and 256 kept for the rest of
// runner (the board, the live board's clients, MCP servers, models'
// connections).
func maxRunning() int {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil || l.Cur == unix.RLIM_INFINITY || l.Cur > 1<<24 {
		return 1 << 22
	}
	n := int(l.Cur)
	return max(16, (n-n/8-256)/4)
}
