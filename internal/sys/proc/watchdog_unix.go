//go:build unix

package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A step's processes must not outlive runner when runner is killed
// without a chance to end them (kill -9, the OOM killer, a crash): on
// Temporal a dead worker's step is run again elsewhere, and an orphan
// would race its retry (two writers of one workspace). Nothing inside
// runner can act after SIGKILL, and PR_SET_PDEATHSIG reaches only the
// first process of a step (and fires when the Go thread that forked it
// exits, not the process). What does hold is the kernel closing a dead
// process's file descriptors: runner starts one watchdog, a tiny `sh`
// outside every step (its own process group, runner's cgroup), that reads
// a pipe whose write end only runner holds. At EOF, which runner's death
// gives however it dies, it ends what its register names: the cgroup
// every step's cgroup is made under (cgroup.kill: all of them, what left
// a process group included), and, without cgroups, each running step's
// process group. The register is a directory of small files (a cgroup,
// then a process group): the steps' cgroup is written once; without
// cgroups a step writes its own file as it starts and removes it once its
// processes are gone. The cgroups, empty by then, are removed too. A
// runner that exits normally has removed them and the register itself
// (Shutdown), so the watchdog, reading with sh's own read, finds nothing
// and starts no process.
const watchdogScript = `read -r _
[ -d "$1" ] || exit 0
for f in "$1"/*; do
	[ -f "$f" ] || continue
	cg= pgid=
	{ read cg; read pgid; } < "$f"
	if [ -n "$cg" ]; then echo 1 > "$cg/cgroup.kill"; fi
	if [ -n "$pgid" ]; then kill -s KILL -- "-$pgid" 2>/dev/null; fi
done
for f in "$1"/*; do
	[ -f "$f" ] || continue
	cg=
	read cg < "$f"
	i=0
	while [ -n "$cg" ] && [ $i -lt 100 ]; do
		for d in "$cg"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
		rmdir "$cg" 2>/dev/null && break
		sleep 0.1; i=$((i+1))
	done
done
rm -rf "$1"
`

// theWatchdog is this process's watchdog; a new one is started if it
// died (someone killed it).
var theWatchdog struct {
	mu   sync.Mutex
	dir  string   // the register
	w    *os.File // the pipe; never written, closed only by our death
	dead chan struct{}
	cg   string // the steps' cgroup the register names ("" none yet)
	pid  int
}

// watchdog is one step's entry in the register; nil when the step needs
// none (the steps' cgroup is registered) or there is no watchdog (no
// /bin/sh): the step runs as it did before watchdogs.
type watchdog struct {
	path string
	f    *os.File
}

// startWatchdog registers a step whose cgroup is cg (nil: none), starting
// the watchdog if it is not running. Called with startMu held, so that
// the reaping of orphans never takes the watchdog for one.
func startWatchdog(cg *stepCgroup) *watchdog {
	dir := ensureWatchdog()
	if dir == "" {
		return nil
	}
	if cg != nil {
		if steps := runCgroupPath(); steps != "" {
			registerCgroup(dir, steps)
			return nil
		}
	}
	f, err := os.CreateTemp(dir, "step-")
	if err != nil {
		return nil
	}
	f.WriteString(cg.path() + "\n")
	return &watchdog{path: f.Name(), f: f}
}

// registerCgroup names the steps' cgroup in the register dir once (again
// in a new register, if the watchdog was restarted).
func registerCgroup(dir, cg string) {
	w := &theWatchdog
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cg == cg || w.dir != dir {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "steps"), []byte(cg+"\n"), 0o600); err == nil {
		w.cg = cg
	}
}

func ensureWatchdog() string {
	w := &theWatchdog
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead != nil {
		select {
		case <-w.dead:
			w.dead = nil
		default:
			return w.dir
		}
	}
	dir, err := os.MkdirTemp("", "runner-watchdog-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return ""
	}
	r, pw, err := os.Pipe()
	if err != nil {
		os.Remove(dir)
		return ""
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "runner-watchdog", dir)
	cmd.Stdin = r
	// Its own process group: a signal to runner's group (a terminal's
	// ^C) must not end the watchdog before runner has stopped its steps.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		os.Remove(dir)
		return ""
	}
	started.Store(cmd.Process.Pid, true) // ours to wait for, not an orphan
	dead := make(chan struct{})
	go func() {
		cmd.Wait()
		started.Delete(cmd.Process.Pid)
		pw.Close()
		close(dead)
	}()
	w.dir, w.w, w.dead, w.cg, w.pid = dir, pw, dead, "", cmd.Process.Pid
	return dir
}

// arm adds the step's process group to its entry.
func (wd *watchdog) arm(pgid int) {
	if wd != nil {
		wd.f.WriteString(strconv.Itoa(pgid) + "\n")
		wd.f.Close()
	}
}

// disarm removes the step's entry: its processes are gone, or kept on
// purpose.
func (wd *watchdog) disarm() {
	if wd != nil {
		wd.f.Close()
		os.Remove(wd.path)
	}
}

// Shutdown is what a binary that ran steps does as it exits normally:
// what the watchdog would do at runner's death is done here, with system
// calls rather than a process each (rmdir of up to maxFreeCgroups kept
// cgroups, then the register), and the watchdog, with nothing left to
// end, is stopped and waited for. So nothing runner made outlives its
// exit, and what its cleaning costs is counted as runner's. While a step
// still runs (its cgroup or its entry remains), everything is left to
// the watchdog, as at a crash.
func Shutdown() {
	// No step starts meanwhile. A start that stays in the kernel (an
	// executable on a hung network mount) must not hang the exit: past a
	// second the cleaning is left to the watchdog.
	for deadline := time.Now().Add(time.Second); !startMu.TryLock(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return
		}
	}
	defer startMu.Unlock()
	if !removeStepsCgroups() {
		return
	}
	w := &theWatchdog
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead == nil {
		return
	}
	select {
	case <-w.dead:
		return // killed by someone: its register stays for no one to read
	default:
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() != "steps" {
			return // a running step's entry (no cgroups)
		}
	}
	if os.RemoveAll(w.dir) != nil {
		return
	}
	w.w.Close()
	select {
	case <-w.dead:
	case <-time.After(2 * time.Second):
	}
	w.dead, w.cg = nil, ""
}
