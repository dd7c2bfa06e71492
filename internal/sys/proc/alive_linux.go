package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes this process the "child subreaper" of everything
// it starts (prctl PR_SET_CHILD_SUBREAPER): a step's process that leaves
// its parent (a daemon, a double fork) is reparented to runner instead of
// PID 1, so runner reaps it once it ends, where a container's PID 1 would
// not. cmd/runner calls it once at start.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// procStat is what /proc/N/stat says of a process.
type procStat struct {
	state      byte
	ppid, pgrp int
	start      uint64 // clock ticks after boot
}

// scan looks through /proc for the processes of a step: those of its
// process group, and those that left it (setsid, a double fork into a new
// session) but carry its token in their environment. Only processes
// started no earlier than the step's first one are read for a token.
// groupRunning: a process of the group is running (not a zombie);
// escaped: the pids of running processes outside the group with the token;
// ok is false when /proc cannot be read.
func scan(pgid int, token string, since uint64) (groupRunning bool, escaped []int, ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return false, nil, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, nil, false
	}
	self := os.Getpid()
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.state == 'Z' || st.state == 'X' {
			continue // gone meanwhile, or dead
		}
		if st.pgrp == pgid {
			groupRunning = true
			continue
		}
		// pgrp 0: a kernel thread, whose environment is always empty.
		if token != "" && st.pgrp != 0 && st.start >= since && hasToken(pid, token) {
			escaped = append(escaped, pid)
		}
	}
	return groupRunning, escaped, true
}

// readStat reads /proc/N/stat with one open, one read and one close into
// a buffer on the stack: a step's end reads it for every process on the
// host, so it is kept cheap (os.ReadFile would also stat and allocate).
func readStat(pid int) (procStat, bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, false
	}
	var buf [1024]byte // a stat line is about 300 bytes; comm is at most 64
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, false
	}
	return parseStat(buf[:n])
}

// parseStat reads /proc/N/stat: "pid (comm) S ppid pgrp ... starttime ...".
// comm may hold spaces and parentheses, so fields are counted from the
// last ')'. State is field 0 after it, ppid 1, pgrp 2, starttime 19.
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	var st procStat
	rest, field, got := b[i+1:], 0, 0
	for len(rest) > 0 && got < 4 {
		for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\n') {
			rest = rest[1:]
		}
		j := 0
		for j < len(rest) && rest[j] != ' ' && rest[j] != '\n' {
			j++
		}
		f := rest[:j]
		rest = rest[j:]
		if len(f) == 0 {
			break
		}
		switch field {
		case 0:
			if len(f) != 1 {
				return procStat{}, false
			}
			st.state = f[0]
			got++
		case 1, 2:
			v, ok := atoi(f)
			if !ok {
				return procStat{}, false
			}
			if field == 1 {
				st.ppid = v
			} else {
				st.pgrp = v
			}
			got++
		case 19:
			v, ok := atoi(f)
			if !ok {
				return procStat{}, false
			}
			st.start = uint64(v)
			got++
		}
		field++
	}
	return st, got == 4
}

// atoi reads a decimal number (a leading '-' allowed: pgrp can be -1 in
// odd cases) without allocating.
func atoi(f []byte) (int, bool) {
	neg := len(f) > 0 && f[0] == '-'
	if neg {
		f = f[1:]
	}
	if len(f) == 0 || len(f) > 19 {
		return 0, false
	}
	n := 0
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// hasToken reports whether a process's environment holds the token
// variable (readable for our own user's processes only). While a process
// is in execve, /proc/N/environ reads as empty, not as an error: a daemon
// caught at `exec sleep` would look token-less and outlive its step, so an
// empty read is read again for up to 250 ms (only processes started since
// the step began, with an empty environment, pay for it). A few
// milliseconds were not enough on a loaded machine: a CI run with the
// test packages building beside it saw a `setsid -f` daemon escape.
func hasToken(pid int, token string) bool {
	path := "/proc/" + strconv.Itoa(pid) + "/environ"
	env, err := os.ReadFile(path)
	for wait, waited := 250*time.Microsecond, time.Duration(0); err == nil && len(env) == 0 && waited < 250*time.Millisecond; wait = min(2*wait, 20*time.Millisecond) {
		time.Sleep(wait)
		waited += wait
		env, err = os.ReadFile(path)
	}
	if err != nil {
		return false
	}
	kv := []byte(TokenEnv + "=" + token + "\x00")
	return bytes.HasPrefix(env, kv) || bytes.Contains(env, append([]byte{0}, kv...))
}

// startTime is when pid started, in clock ticks after boot (0: unknown,
// which makes every process a candidate).
func startTime(pid int) uint64 {
	st, ok := readStat(pid)
	if !ok {
		return 0
	}
	return st.start
}

// reapOrphans waits for the zombies reparented to this process: children
// of a subreaper that are not ones it started itself. exec's own children
// (in the registry, or in runner's process group like a plain
// exec.Command) are left to their Wait. The kernel says which child is a
// zombie (waitid with WNOWAIT); only when one of those others stands first
// (a parallel step's process about to be waited for) are this process's
// children listed (/proc/self/task/*/children) to look past it.
func reapOrphans() {
	startMu.Lock()
	defer startMu.Unlock()
	self, ourGroup := os.Getpid(), unix.Getpgrp()
	for {
		pid := peekZombie(unix.P_ALL, 0)
		if pid <= 0 {
			return
		}
		if !orphan(pid, ourGroup) || !reap(pid) {
			break
		}
	}
	pids, ok := children(self)
	if !ok {
		reapOrphansScan(self, ourGroup)
		return
	}
	for _, pid := range pids {
		if orphan(pid, ourGroup) {
			reap(pid) // WNOHANG: a running one is left alone
		}
	}
}

// reapGroup reaps the zombies of the step's process group that are this
// process's children (the main process's orphans), so the group can be
// seen empty. The main process itself is left to its Wait.
func reapGroup(pgid int) {
	startMu.Lock()
	defer startMu.Unlock()
	ourGroup := unix.Getpgrp()
	for {
		pid := peekZombie(unix.P_PGID, pgid)
		if pid <= 0 || !orphan(pid, ourGroup) || !reap(pid) {
			return
		}
	}
}

// orphan: a child of this process that nobody else will wait for.
func orphan(pid, ourGroup int) bool {
	if _, mine := started.Load(pid); mine {
		return false
	}
	pg, err := unix.Getpgid(pid)
	return err == nil && pg != ourGroup
}

// reap waits for pid if it has ended (WNOHANG); false when it did not
// (a loop over the zombies stops rather than spin).
func reap(pid int) bool {
	var ws unix.WaitStatus
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	return err == nil && got == pid
}

// peekZombie is a zombie child of this process matching idtype/id, left
// waitable (WNOWAIT); 0 when there is none.
func peekZombie(idtype, id int) int {
	var info [128]byte // siginfo_t
	_, _, errno := unix.Syscall6(unix.SYS_WAITID, uintptr(idtype), uintptr(id), uintptr(unsafe.Pointer(&info[0])),
		unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, 0, 0)
	if errno != 0 {
		return 0
	}
	// si_pid follows si_signo, si_errno, si_code and, on 64-bit systems,
	// the padding that aligns the union.
	off := 12
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	return int(*(*int32)(unsafe.Pointer(&info[off])))
}

// children lists this process's children (every thread's); false when
// the kernel does not say (CONFIG_PROC_CHILDREN).
func children(self int) ([]int, bool) {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return nil, false
	}
	tids, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, false
	}
	var pids []int
	var buf [4096]byte
	for _, tid := range tids {
		fd, err := unix.Open("/proc/self/task/"+tid+"/children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				if _, err := os.Stat("/proc/self/task/" + tid); err == nil {
					return nil, false // no children files in this kernel
				}
			}
			continue // the thread is gone
		}
		for {
			n, err := unix.Read(fd, buf[:])
			if err != nil || n <= 0 {
				break
			}
			for _, f := range bytes.Fields(buf[:n]) {
				if pid, ok := atoi(f); ok {
					pids = append(pids, pid)
				}
			}
			if n < len(buf) {
				break
			}
		}
		unix.Close(fd)
	}
	return pids, true
}

// escapesPossible: a process may have left the step's process group and
// live on outside it, so /proc must be looked through (the fallback
// without cgroups). After the step's first process is gone, every process
// of the step still running is in its group or descends from an orphan
// runner inherited as subreaper; runner having no orphan child proves
// nothing escaped. Without the children files, anything may have.
func escapesPossible() bool {
	pids, ok := children(os.Getpid())
	if !ok {
		return true
	}
	ourGroup := unix.Getpgrp()
	for _, pid := range pids {
		if orphan(pid, ourGroup) {
			return true
		}
	}
	return false
}

// reapOrphansScan is reapOrphans through /proc, for kernels without the
// children files.
func reapOrphansScan(self, ourGroup int) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.state != 'Z' || st.ppid != self || st.pgrp == ourGroup {
			continue
		}
		if _, mine := started.Load(pid); mine {
			continue
		}
		reap(pid)
	}
}

// pidfds hold the processes a stop signalled, so it waits for each to be
// gone for good: a process being killed leaves its cgroup, and loses the
// environment that carries its token, before it has finished exiting.
// Seen as gone then, it was still there (not yet a zombie) when Run
// returned, and became a zombie after the orphans were reaped.
type pidfds map[int]int

// track opens a pidfd for pid (once).
func (p pidfds) track(pid int) {
	if _, ok := p[pid]; ok {
		return
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		p[pid] = -1 // gone already (or no pidfds: the kernel's answer stands)
		return
	}
	p[pid] = fd
}

// pending: a tracked process has not finished exiting.
func (p pidfds) pending() bool {
	for pid, fd := range p {
		if fd < 0 {
			continue
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 0 {
			return true
		}
		unix.Close(fd)
		p[pid] = -1
	}
	return false
}

func (p pidfds) close() {
	for pid, fd := range p {
		if fd >= 0 {
			unix.Close(fd)
		}
		delete(p, pid)
	}
}
