// Package proc runs a command or a shell script the way runner's command and
// test steps need: in its own process group, with a timeout that ends the
// whole group (SIGTERM, then SIGKILL after a grace period), and with its
// output kept in bounded memory however much it prints.
package proc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/planrunner/runner/internal/sys/sandbox"
	"github.com/rs/zerolog"
)

// noCgroup makes every step use the fallback (tests of that path).
var noCgroup atomic.Bool

// noCgroupLog logs once why steps are not tracked by cgroup.
var noCgroupLog sync.Once

// Defaults for the zero values of Spec.
const (
	DefaultGrace     = 5 * time.Second
	DefaultMaxOutput = 1 << 20
)

// Spec says what to run and how.
type Spec struct {
	Script string // run as `sh -c Script` (when Args is empty)
	// Direct is Script's words when Script is one simple command (Argv):
	// its program is then started without a shell, as sh would start it,
	// unless it is not found or Sandbox is set.
	Direct []string
	Args   []string // or an argv, run directly
	Dir    string
	Env    []string  // full environment (caller builds it); nil: this process's
	Stdin  io.Reader // nil: no stdin (/dev/null)
	// Stdout and Stderr, when set, also receive every byte of the stream,
	// uncapped, as it comes (for streaming parsers and live logs). A write
	// error stops the copy to that writer only; the process is still drained.
	Stdout, Stderr io.Writer
	Timeout        time.Duration // 0: none (ctx still applies)
	Grace          time.Duration // SIGTERM→SIGKILL delay; 0: default 5s
	MaxOutput      int           // bytes kept per stream (head+tail); 0: default 1 MiB
	// KeepBackground leaves processes of the group running after the main
	// process exits on its own. By default they are ended like on a
	// timeout, so a step never leaks a server or a stray `sleep &`.
	KeepBackground bool
	// Log, when set, gets debug messages (how processes are tracked).
	Log *zerolog.Logger
	// Sandbox, when set, runs the process confined (package sandbox): it
	// writes only its directory, the run's and a private temporary one,
	// sees no other process, has no network unless allowed and cannot
	// gain privileges. Its processes end with it whatever KeepBackground
	// says (its PID namespace ends with its first process).
	Sandbox *sandbox.Policy
}

// Output is what was kept of one stream.
type Output struct {
	Text    string // head + "\n[... N bytes dropped ...]\n" + tail
	Bytes   int64  // total seen
	Dropped int64  // bytes left out of Text
}

// Result says how the process ended.
type Result struct {
	ExitCode       int    // -1 if killed by a signal or not started
	Signal         string // e.g. "SIGTERM", when killed by a signal
	Stdout, Stderr Output
	TimedOut       bool // Spec.Timeout passed
	Canceled       bool // ctx was done before the process exited
	Duration       time.Duration
	Pid            int
	Sandbox        *sandbox.Report // how Spec.Sandbox confined it
}

// Run starts the process and waits for it and its whole process group. The
// error is only for a process that could not start (binary missing, bad
// dir); a non-zero exit, a timeout or a cancellation are in the Result.
func Run(ctx context.Context, s Spec) (*Result, error) {
	if s.Grace <= 0 {
		s.Grace = DefaultGrace
	}
	if s.MaxOutput <= 0 {
		s.MaxOutput = DefaultMaxOutput
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.Args) == 0 && s.Script == "" {
		return nil, errors.New("proc: nothing to run: neither Script nor Args is set")
	}
	// Every process of the step inherits a token in its environment, so
	// one that leaves the process group (setsid, a daemon's double fork)
	// is still found and ended with the step.
	token := newToken()
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(env[:len(env):len(env)], TokenEnv+"="+token)
	// The step's own cgroup, where the kernel lets runner make one: the
	// process is cloned into it, and all it starts stays there.
	cg, why := newStepCgroup(token)
	if cg == nil && s.Log != nil {
		noCgroupLog.Do(func() {
			s.Log.Debug().Str("why", why).Msg("steps' processes are tracked by process group and /proc, not by cgroup")
		})
	}
	if cg != nil {
		defer func() { cg.close() }()
	}
	// newCmd makes the command; direct: Spec.Direct without a shell, nil
	// when its program is not where sh would find it.
	newCmd := func(direct bool) *exec.Cmd {
		var cmd *exec.Cmd
		switch {
		case len(s.Args) > 0:
			cmd = exec.Command(s.Args[0], s.Args[1:]...)
			cmd.Env = env
		case direct:
			if cmd = directCmd(s.Direct, env, s.Dir); cmd == nil {
				return nil
			}
		default:
			cmd = exec.Command("/bin/sh", "-c", s.Script)
			cmd.Env = env
		}
		cmd.Dir, cmd.Stdin = s.Dir, s.Stdin
		if s.Stdin == nil {
			if null := devNull(); null != nil {
				cmd.Stdin = null
			}
		}
		// Only the copy of Stdin is exec's; a reader that never ends must not
		// keep Wait from returning after the process is gone.
		cmd.WaitDelay = s.Grace
		setGroup(cmd)
		return cmd
	}
	direct := len(s.Args) == 0 && len(s.Direct) > 0 && s.Sandbox == nil
	var cmd *exec.Cmd
	if direct {
		cmd = newCmd(true)
	}
	if cmd == nil {
		direct, cmd = false, newCmd(false)
	}
	var sb *sandbox.Sandbox
	if s.Sandbox != nil {
		var err error
		if sb, err = sandbox.Wrap(cmd, *s.Sandbox); err != nil {
			return nil, err
		}
		defer sb.Close()
	}

	stdout, stderr := newCapture(s.MaxOutput, s.Stdout), newCapture(s.MaxOutput, s.Stderr)

	// Every process runner starts gets a copy of all of runner's
	// descriptors, which its exec then closes one by one. The pipes and
	// the cgroup's directory are opened only when it is this step's turn
	// to start (startMu), and the child's ends closed before the next
	// step's turn: steps waiting to start hold none, or each child of a
	// wide group would close those of all its waiting siblings.
	start := time.Now()
	// A slot first: a group wider than the descriptors runner may open
	// runs as many steps at once as fit, the others as those end, instead
	// of failing with "too many open files".
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	awaitTurn()
	startMu.Lock()
	// Our own pipes rather than exec's: cmd.Wait then returns as soon as the
	// main process exits, and we decide how long to drain after that.
	outR, outW, errR, errW, err := outputPipes()
	if err != nil {
		startMu.Unlock()
		return nil, err
	}
	if cg != nil && !cg.open() {
		cg.discard()
		cg = nil
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	intoCgroup(cmd, cg)
	wd := startWatchdog(cg) // before the step, so no moment of it is unwatched
	err = cmd.Start()
	if err != nil && direct {
		// Found but not startable (not a binary, no permission): sh
		// says why, with its status, as it would have anyway.
		direct, cmd = false, newCmd(false)
		cmd.Stdout, cmd.Stderr = outW, errW
		intoCgroup(cmd, cg)
		err = cmd.Start()
	}
	if err == nil {
		started.Store(cmd.Process.Pid, true)
		wd.arm(cmd.Process.Pid)
	}
	cg.started()
	outW.Close()
	errW.Close()
	startMu.Unlock()
	// Deferred before the cgroup's close runs (defers run last first):
	// the watchdog goes once the step's processes are gone or kept.
	defer wd.disarm()
	if sb != nil {
		sb.Started()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	defer started.Delete(cmd.Process.Pid)
	defer reapOrphans()
	copied := make(chan struct{}, 2) // a value for each stream drained
	for _, c := range []struct {
		r *os.File
		w io.Writer
	}{{outR, stdout}, {errR, stderr}} {
		go func() {
			defer func() { copied <- struct{}{} }()
			buf := copyBufs.Get().(*[]byte)
			defer copyBufs.Put(buf)
			// Through our buffer: *os.File's WriteTo would allocate one
			// for every stream of every step.
			io.CopyBuffer(c.w, struct{ io.Reader }{c.r}, *buf) // ends at EOF, or when the read end is closed below
		}()
	}

	g := newGroup(cmd, s.Grace, token, cg)
	if cg == nil {
		// Only the fallback looks for the step's processes by start time.
		g.since = startTime(cmd.Process.Pid)
	}
	// A timeout or a cancellation stops the group from a callback, not a
	// goroutine of its own: a step that ends first costs no wake-up.
	var timedOut, canceled atomic.Bool
	stopCanceled := context.AfterFunc(ctx, func() {
		canceled.Store(true)
		g.stop()
	})
	var timeout *time.Timer
	if s.Timeout > 0 {
		timeout = time.AfterFunc(s.Timeout, func() {
			timedOut.Store(true)
			g.stop()
		})
	}

	waitErr := cmd.Wait()
	res := &Result{Duration: time.Since(start), Pid: cmd.Process.Pid}
	// A callback not stopped in time has begun its stop, and marked why,
	// before g.stop below returns.
	stopCanceled()
	if timeout != nil {
		timeout.Stop()
	}
	if !s.KeepBackground || timedOut.Load() || canceled.Load() {
		g.stop() // waits for a stop a callback began, too
	}

	// Anything still holding the pipes is outside the group (or kept on
	// purpose): give it the grace period, then stop reading.
	if left := 2; !drain(copied, &left, s.Grace) {
		outR.Close()
		errR.Close()
		drain(copied, &left, -1)
	}
	outR.Close()
	errR.Close()

	res.ExitCode, res.Signal = exitStatus(cmd.ProcessState)
	if direct && res.Signal != "" && !timedOut.Load() && !canceled.Load() {
		// sh would have outlived its command and said how it ended.
		var msg string
		res.ExitCode, res.Signal, msg = shSignaled(cmd.ProcessState)
		stderr.Write([]byte(msg))
	}
	if res.ExitCode == -1 && res.Signal == "" && waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return nil, waitErr
	}
	if sb != nil {
		rep := sb.Report()
		res.Sandbox = &rep
		if rep.Active {
			// The helper passes on its command's status: as its PID
			// namespace's init it cannot die of the command's signal.
			code, sig, err := sb.Finish(cmd.ProcessState)
			if err != nil {
				return nil, err
			}
			res.ExitCode, res.Signal = code, sig
		}
	}
	res.TimedOut, res.Canceled = timedOut.Load(), canceled.Load()
	res.Stdout, res.Stderr = stdout.output(), stderr.output()
	return res, nil
}

// drain takes *left values from done, counting them off, for at most d
// (d < 0: however long it takes); false when d passed first.
func drain(done <-chan struct{}, left *int, d time.Duration) bool {
	var timeout <-chan time.Time // nil until needed, and for d < 0
	for ; *left > 0; *left-- {
		select {
		case <-done:
			continue
		default:
		}
		if timeout == nil && d >= 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-done:
		case <-timeout:
			return false
		}
	}
	return true
}

// slots holds one for each step whose process runs (see Run).
var slots = make(chan struct{}, maxRunning())

// awaitTurn is called as a step begins to wait for its turn to start
// (tests count the steps waiting).
var awaitTurn = func() {}

// copyBufs are the buffers that copy steps' output into their captures.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// devNull is /dev/null, opened once for every step without stdin (exec
// would open and close it for each); nil if it cannot be opened.
var devNull = sync.OnceValue(func() *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil
	}
	return f
})

// TokenEnv is the environment variable that marks a step's processes.
const TokenEnv = "RUNNER_PROC_TOKEN"

func newToken() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// started holds the pids of the processes Run started and has not waited
// for yet; startMu orders starting one against reaping orphans, so a
// child that ends at once is never taken for an orphan.
var (
	startMu sync.Mutex
	started sync.Map
)

// group ends a step's processes once, however many callers ask: its
// process group, and the processes that left the group with its token.
type group struct {
	cmd   *exec.Cmd
	grace time.Duration
	token string
	since uint64      // the step's first process's start time (ticks)
	cg    *stepCgroup // the step's cgroup; nil: its group, token and /proc
	// Set by the one goroutine that stops the group (under once):
	sig  syscall.Signal         // the stop's signal so far (0: not stopping)
	sent map[int]syscall.Signal // what each process was sent
	fds  pidfds                 // the processes signalled, until they are gone
	once sync.Once
	done chan struct{}
}

func newGroup(cmd *exec.Cmd, grace time.Duration, token string, cg *stepCgroup) *group {
	return &group{cmd: cmd, grace: grace, token: token, cg: cg, done: make(chan struct{}),
		sent: map[int]syscall.Signal{}, fds: pidfds{}}
}

// stop sends SIGTERM to the group, SIGKILL to what is left after the grace
// period, and returns when no process of the group is running.
func (g *group) stop() {
	g.once.Do(func() {
		defer close(g.done)
		defer g.fds.close()
		if !groupAlive(g) {
			return
		}
		signalGroup(g, false)
		if waitGone(g, g.grace) {
			return
		}
		signalGroup(g, true)
		waitGone(g, 2*time.Second) // SIGKILL cannot be ignored; this is only the kernel's time
	})
	<-g.done
}

// waitGone polls until the group has no running process or d has passed.
func waitGone(g *group, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		if !groupAlive(g) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
}
