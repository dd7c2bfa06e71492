package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// A step's processes are tracked, where the kernel allows it, by a cgroup
// v2 of their own: created beside runner (a child of runner's own cgroup),
// the first process is cloned straight into it (CLONE_INTO_CGROUP, so
// nothing it starts can run before it is there), every process it starts
// stays in it whatever it does to its session, group or environment, and
// cgroup.kill ends them all at once. What is left is one file to read
// (cgroup.events), not every process of the host. Where cgroups cannot be
// written (no cgroup v2, an unprivileged user without delegation), the
// process group, the token and /proc are used instead (see scan).

var cgroupParent struct {
	once sync.Once
	dir  string // runner's own cgroup directory; "" when unusable
	why  string // why not, for the debug log
}

// stepsCgroupDir is the directory under which steps' cgroups are made, or
// "" and the reason cgroups are not used.
func stepsCgroupDir() (string, string) {
	if noCgroup.Load() {
		return "", "turned off (test)"
	}
	p := &cgroupParent
	p.once.Do(func() {
		mi, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			p.why = err.Error()
			return
		}
		own, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			p.why = err.Error()
			return
		}
		dir, err := findCgroup(string(mi), string(own))
		if err != nil {
			p.why = err.Error()
			return
		}
		if err := probeCgroup(dir); err != nil {
			p.why = err.Error()
			return
		}
		p.dir = dir
	})
	return p.dir, p.why
}

// findCgroup is the directory of this process's cgroup v2: the "0::"
// line of /proc/self/cgroup placed under the cgroup2 mount that holds it
// (mountinfo's root field says which part of the hierarchy a mount shows).
func findCgroup(mountinfo, selfCgroup string) (string, error) {
	var path string
	for _, l := range strings.Split(selfCgroup, "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			path = p
		}
	}
	if path == "" || !strings.HasPrefix(path, "/") {
		return "", errors.New("no cgroup v2 in /proc/self/cgroup")
	}
	for _, l := range strings.Split(mountinfo, "\n") {
		left, right, ok := strings.Cut(l, " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 1 || rf[0] != "cgroup2" {
			continue
		}
		root, mnt := unescapeMount(lf[3]), unescapeMount(lf[4])
		rel, ok := strings.CutPrefix(path, root)
		if root == "/" {
			rel, ok = path, true
		}
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
			continue
		}
		return filepath.Join(mnt, rel), nil
	}
	return "", errors.New("cgroup v2 is not mounted where this process's cgroup is")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// probeCgroup makes and removes a child cgroup, and checks it has
// cgroup.kill (Linux 5.14).
func probeCgroup(dir string) error {
	probe := filepath.Join(dir, fmt.Sprintf("runner-probe-%d-%s", os.Getpid(), newToken()))
	if err := unix.Mkdir(probe, 0o755); err != nil {
		return fmt.Errorf("cannot create a cgroup under %s: %w", dir, err)
	}
	defer unix.Rmdir(probe)
	if err := unix.Access(filepath.Join(probe, "cgroup.kill"), unix.W_OK); err != nil {
		return fmt.Errorf("cgroup.kill: %w", err)
	}
	// Cloning into it (clone3, Linux 5.7) must work too: a child made
	// there to exec a path that does not exist fails at the exec, not
	// at the clone.
	fd, err := unix.Open(probe, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = syscall.ForkExec("/nonexistent/runner-cgroup-probe", []string{"probe"},
		&syscall.ProcAttr{Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}})
	if !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("cannot start a process in a cgroup: %v", err)
	}
	return nil
}

// stepCgroup is one step's cgroup.
type stepCgroup struct {
	parent, dir string // runner's own cgroup, and the step's
	// fd is the directory, open only while the step's first process is
	// cloned into it (CLONE_INTO_CGROUP; -1 before and after): every
	// process runner starts gets a copy of runner's descriptors that its
	// exec then closes (see Run).
	fd     int
	killed atomic.Bool // cgroup.kill was written (by the group's stop)
	// emptied: populated found no process. Nothing enters a cgroup but
	// what runner clones into it or what a process in it starts, so it
	// stays empty until the next step's start: asked again (the step's
	// stop, then its close), the answer needs no read of the kernel's.
	emptied atomic.Bool
}

// Steps' cgroups live under one cgroup of runner's (made at the first
// step, holding no process itself), so the watchdog has one entry to end
// them all by, and are used again by later steps once empty: making and
// removing a cgroup for every step cost more than the rest of a step's
// bookkeeping. A cgroup is taken back only when no process is in it.
var stepsCgroup struct {
	mu   sync.Mutex
	dir  string        // the cgroup of runner's steps; "" not made yet
	free []*stepCgroup // empty step cgroups to use again
}

// maxFreeCgroups bounds the cgroups kept for later steps (those of a
// wide parallel group beyond it are removed).
const maxFreeCgroups = 256

// newStepCgroup gives a step an empty cgroup; nil and the reason when it
// cannot.
func newStepCgroup(token string) (*stepCgroup, string) {
	parent, why := stepsCgroupDir()
	if parent == "" {
		return nil, why
	}
	sc := &stepsCgroup
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if n := len(sc.free); n > 0 {
		c := sc.free[n-1]
		sc.free = sc.free[:n-1]
		c.emptied.Store(false)
		return c, ""
	}
	if sc.dir == "" {
		dir := filepath.Join(parent, fmt.Sprintf("runner-%d-%s", os.Getpid(), token))
		if err := unix.Mkdir(dir, 0o755); err != nil {
			return nil, err.Error()
		}
		sc.dir = dir
	}
	dir := filepath.Join(sc.dir, "runner-"+token)
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return nil, err.Error()
	}
	return &stepCgroup{parent: parent, dir: dir, fd: -1}, ""
}

// removeStepsCgroups removes the steps' cgroups kept for later steps and
// the cgroup they are made under; false when a step's cgroup is still in
// use (the cgroup then stays for the watchdog).
func removeStepsCgroups() bool {
	sc := &stepsCgroup
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, c := range sc.free {
		unix.Rmdir(c.dir)
	}
	sc.free = nil
	if sc.dir == "" {
		return true
	}
	if unix.Rmdir(sc.dir) != nil {
		return false
	}
	sc.dir = ""
	return true
}

// runCgroupPath is the cgroup under which steps' cgroups are made ("" for
// none yet): the one the watchdog ends.
func runCgroupPath() string {
	stepsCgroup.mu.Lock()
	defer stepsCgroup.mu.Unlock()
	return stepsCgroup.dir
}

// path is the cgroup's directory ("" for none).
func (c *stepCgroup) path() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// open opens the directory for the step's start (see fd); false when it
// cannot be opened.
func (c *stepCgroup) open() bool {
	fd, err := unix.Open(c.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	c.fd = fd
	return true
}

// discard removes a cgroup that could not be opened: not one to use
// again.
func (c *stepCgroup) discard() {
	unix.Rmdir(c.dir)
}

// started lets go of the directory once the step's first process is in
// it (see fd); its files are opened by path after.
func (c *stepCgroup) started() {
	if c != nil && c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// read reads one of the cgroup's files into buf.
func (c *stepCgroup) read(name string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(c.dir+"/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := unix.Read(fd, buf[n:])
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
}

// populated: a process of the step is still in its cgroup. A process
// leaves it while it exits (before it is a zombie); the caller waits for
// those by pidfd.
func (c *stepCgroup) populated() bool {
	if c.emptied.Load() {
		return false
	}
	var buf [128]byte
	b, err := c.read("cgroup.events", buf[:])
	if err != nil {
		return false
	}
	if bytes.Contains(b, []byte("populated 1")) {
		return true
	}
	c.emptied.Store(true)
	return false
}

// procs are the pids in the cgroup.
func (c *stepCgroup) procs() []int {
	var buf [512]byte
	b, err := c.read("cgroup.procs", buf[:])
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range bytes.Fields(b) {
		if pid, ok := atoi(f); ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

// kill ends every process in the cgroup with SIGKILL (cgroup.kill), those
// it forks meanwhile included.
func (c *stepCgroup) kill() error {
	c.killed.Store(true)
	fd, err := unix.Open(c.dir+"/cgroup.kill", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte("1"))
	return err
}

// close gives the cgroup back for a later step once it is empty, unless
// it was killed: a kernel may kill what is later cloned into a cgroup
// once killed (Linux 6.18 does). Processes kept on purpose (keep_background) go back to runner's own
// cgroup first, out of the watchdog's reach, and the cgroup is removed.
func (c *stepCgroup) close() {
	if c == nil {
		return
	}
	c.started()
	if !c.killed.Load() && !c.populated() {
		sc := &stepsCgroup
		sc.mu.Lock()
		if len(sc.free) < maxFreeCgroups {
			sc.free = append(sc.free, c)
			sc.mu.Unlock()
			return
		}
		sc.mu.Unlock()
	}
	for range 3 {
		if err := unix.Rmdir(c.dir); err == nil || !errors.Is(err, unix.EBUSY) {
			return
		}
		fd, err := unix.Open(filepath.Join(c.parent, "cgroup.procs"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		for _, pid := range c.procsByPath() {
			unix.Write(fd, []byte(strconv.Itoa(pid)))
		}
		unix.Close(fd)
	}
}

func (c *stepCgroup) procsByPath() []int {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range bytes.Fields(b) {
		if pid, ok := atoi(f); ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

// intoCgroup makes cmd start inside cg (clone3 with CLONE_INTO_CGROUP).
func intoCgroup(cmd *exec.Cmd, cg *stepCgroup) {
	if cg == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = cg.fd
}
