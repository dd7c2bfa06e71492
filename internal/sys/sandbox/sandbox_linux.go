package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The helper is recognised by its argv[0] and argv[1] (see init_linux.go).
const (
	helperArg0 = "runner-sandbox"
	helperArg1 = "--runner-sandbox-init-v1"
)

// config is what the helper is told, as JSON in its argv[2].
type config struct {
	Dir      string   `json:"dir"`
	Write    []string `json:"write"`
	Read     []string `json:"read,omitempty"` // nil: everything
	ReadOnly []string `json:"read_only,omitempty"`
	Hide     []string `json:"hide,omitempty"`
	Network  bool     `json:"network"`
	Landlock int      `json:"landlock"`
	Probe    bool     `json:"probe,omitempty"` // set up, report, exit without running anything
	// Mapped: the sandbox's root is MappedRoot on the host, which cannot
	// search root's private directories: those above a write path are
	// covered (see coverBlocked), and what lies beyond them is skipped.
	Mapped bool `json:"mapped,omitempty"`
	// Trees are the write paths whose idmapped trees runner passes as
	// fds 4, 5, ... in this order, to be moved in place of a bind mount.
	Trees []string `json:"trees,omitempty"`
	// Reach are paths the mapped root could not reach (the program's
	// install, read paths under root's home), whose read-only trees
	// follow the Trees' fds, in this order, to be moved in place.
	Reach []string `json:"reach,omitempty"`
	// NoSeccomp: the kernel has no seccomp filter for this architecture
	// (an optional sandbox runs without).
	NoSeccomp bool `json:"no_seccomp,omitempty"`
	// Endpoint is the host's address the helper forwards from the same
	// address inside (Policy.Endpoint); it asks runner for each
	// connection on the socket at fd EndpointFD.
	Endpoint   string   `json:"endpoint,omitempty"`
	EndpointFD int      `json:"endpoint_fd,omitempty"`
	Path       string   `json:"path,omitempty"`
	Args       []string `json:"args,omitempty"`
}

// Sandbox is one sandboxed process: Wrap it, start the command, call
// Started, wait for it, call Finish, then Close.
type Sandbox struct {
	report          Report
	tmp             string
	status, statusW *os.File
	trees           []*os.File // idmapped write paths, for the helper
	// The endpoint's socket pair: runner's end, and the helper's until
	// it has started.
	fwd       *net.UnixConn
	fwdHelper *os.File
}

// Wrap turns cmd (Path, Args, Dir, Env, SysProcAttr already set) into the
// same command run inside a sandbox: cmd now starts runner's helper in new
// namespaces, which runs the original command confined. With
// Policy.Optional on a kernel that cannot sandbox, cmd is left as it is
// and the Report says so; without it, that is an error saying what is
// missing.
func Wrap(cmd *exec.Cmd, p Policy) (*Sandbox, error) {
	mode := "strict"
	if p.Optional {
		mode = "optional"
	}
	s := &Sandbox{report: Report{Mode: mode, Network: p.Network}}
	k := kernelProbe()
	// What the kernel lacks: unconfined, or (confined) weaker than
	// promised. strict refuses either.
	var unconfined, weaker error
	switch {
	case k.namespaces != nil:
		unconfined = k.namespaces
	case p.Read != nil && k.landlock == 0:
		unconfined = fmt.Errorf("%w: read: narrowing what a step reads needs Landlock, which this kernel lacks (Linux 5.13+ with CONFIG_SECURITY_LANDLOCK and landlock in the lsm= boot list)", ErrUnavailable)
	case k.landlock == 0:
		weaker = fmt.Errorf("%w: Landlock, which this kernel lacks (Linux 5.13+ with CONFIG_SECURITY_LANDLOCK and landlock in the lsm= boot list)", ErrUnavailable)
	case k.seccomp != nil:
		weaker = k.seccomp
	}
	if unconfined != nil || weaker != nil {
		if !p.Optional {
			return nil, fmt.Errorf("sandbox: strict: refusing to run the step less confined than promised: %w", errors.Join(unconfined, weaker))
		}
		if unconfined != nil {
			s.report.Missing = unconfined.Error()
			s.report.Network = true
			return s, nil
		}
		s.report.Missing = weaker.Error()
	}
	abi := k.landlock
	dir := cmd.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	tmp, err := os.MkdirTemp("", "runner-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: private temporary directory: %w", err)
	}
	s.tmp = tmp
	write, err := cleanPaths(append([]string{tmp}, p.Write...), "write")
	if err != nil {
		s.Close()
		return nil, err
	}
	// As root, the sandbox's root is an unprivileged host id; it writes
	// its write paths through idmapped mounts, on which root's files are
	// its own and what it makes is root's on disk.
	m := identity()
	var trees []string
	if m.uidHost == 0 {
		m = rootMapping()
		s.trees, trees, err = idmapTrees(write, tmp)
		if err != nil {
			if !p.Optional {
				s.Close()
				return nil, fmt.Errorf("sandbox: running as root, the step's root is mapped to uid %d and %w, run runner as an ordinary user or use mode: optional", MappedRoot, err)
			}
			m, trees = identity(), nil
			s.report.Missing = strings.TrimPrefix(s.report.Missing+"; ", "; ") +
				"running as root, the step's root stays the host's root (without capabilities): " + err.Error()
		} else if err := chownPrivate(tmp, m); err != nil {
			s.Close()
			return nil, fmt.Errorf("sandbox: private temporary directory: %w", err)
		}
	}
	var read []string
	if p.Read != nil {
		if read, err = cleanPaths(p.Read, "read"); err != nil {
			s.Close()
			return nil, err
		}
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	path, reach, err := s.reach(cmd.Path, env, m, read, write)
	if err != nil {
		s.Close()
		return nil, err
	}
	if read != nil {
		// The step's program runs, wherever it is installed.
		read = append(append(read, dir), programPaths(cmd.Path, env)...)
	}
	cfg := config{Dir: dir, Write: write, Read: read, Network: p.Network, Landlock: abi, NoSeccomp: k.seccomp != nil, Path: path, Args: cmd.Args,
		ReadOnly: existing(p.ReadOnly), Hide: existing(p.Hide), Mapped: m.mapped, Trees: trees, Reach: reach}
	if p.Endpoint != "" && !p.Network {
		if err := s.forward(p.Endpoint); err != nil {
			s.Close()
			return nil, err
		}
		cfg.Endpoint, cfg.EndpointFD = p.Endpoint, 4+len(s.trees)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.status, s.statusW, err = os.Pipe(); err != nil {
		s.Close()
		return nil, err
	}
	env = setEnv(env, "TMPDIR", tmp)
	env = setEnv(env, "TMP", tmp)
	env = setEnv(env, "TEMP", tmp)
	cmd.Env = env
	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{helperArg0, helperArg1, string(js)}
	cmd.ExtraFiles = append([]*os.File{s.statusW}, s.trees...) // fds 3, 4, ...
	if s.fwdHelper != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, s.fwdHelper)
	}
	if m.mapped {
		// Go enters cmd.Dir before the helper runs, as the mapped root,
		// which may not reach it yet; the helper enters it once it can.
		cmd.Dir = "/"
	}
	noTerminal(cmd)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	namespaces(cmd.SysProcAttr, p.Network, m)
	s.report.Active = true
	s.report.Landlock = abi
	s.report.Seccomp = k.seccomp == nil
	s.report.Write = p.Write
	s.report.Read = p.Read
	return s, nil
}

// namespaces asks for the sandbox's namespaces, with ids mapped as m
// says, and (for a user other than root, whose capabilities execve would
// drop) the capabilities the helper needs to set up kept across its
// execve as ambient ones. The helper drops them all before it runs the
// command.
func namespaces(a *syscall.SysProcAttr, network bool, m idMapping) {
	// A session of its own: no controlling terminal, so /dev/tty opens
	// nothing and no terminal takes its TIOCSTI. As its leader it leads
	// its process group too, which a step's stop signals.
	a.Setsid, a.Setpgid, a.Setctty, a.Foreground = true, false, false, false
	a.Cloneflags |= unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS
	if !network {
		a.Cloneflags |= unix.CLONE_NEWNET
	}
	m.apply(a)
	if m.uidIn != 0 {
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	}
	// The sandbox dies with runner, whatever kills runner.
	a.Pdeathsig = syscall.SIGKILL
}

// Report says how the process runs.
func (s *Sandbox) Report() Report { return s.report }

// Started closes runner's copy of the helper's status pipe and of the
// idmapped trees, once the command has started (or failed to).
func (s *Sandbox) Started() {
	if s.statusW != nil {
		s.statusW.Close()
		s.statusW = nil
	}
	closeAll(s.trees)
	s.trees = nil
	if s.fwdHelper != nil {
		s.fwdHelper.Close()
		s.fwdHelper = nil
	}
}

// Finish reads what the helper said once the process is gone: the
// command's own exit status (the helper, its PID namespace's init, cannot
// die of the command's signal), or why the sandbox could not be set up.
// A helper killed before it said anything (a timeout's SIGKILL) is
// reported with its own status.
func (s *Sandbox) Finish(ps *os.ProcessState) (code int, signal string, err error) {
	s.Started()
	msg, _ := io.ReadAll(io.LimitReader(s.status, 64<<10))
	code, signal = -1, ""
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			signal = unix.SignalName(ws.Signal())
		} else {
			code = ps.ExitCode()
		}
	}
	line := string(bytes.TrimSpace(msg))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	switch kind, rest, _ := strings.Cut(line, " "); kind {
	case "exit":
		n, _ := strconv.Atoi(rest)
		return n, "", nil
	case "signal":
		n, _ := strconv.Atoi(rest)
		return -1, unix.SignalName(syscall.Signal(n)), nil
	case "error":
		return -1, "", fmt.Errorf("sandbox: %s", rest)
	}
	return code, signal, nil
}

// Close removes the private temporary directory.
func (s *Sandbox) Close() {
	s.Started()
	if s.status != nil {
		s.status.Close()
	}
	if s.fwd != nil {
		s.fwd.Close()
	}
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// cleanPaths checks that each path is absolute and makes it canonical
// (symbolic links resolved: a bind mount or a Landlock rule follows them,
// and the report should name what was opened). A path that does not exist
// is an error: writing it could only fail.
func cleanPaths(paths []string, what string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: %s: %q is not an absolute path", what, p)
		}
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %s: %w", what, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// existing keeps the paths that exist (runner's files that a run has not
// made yet need no protection).
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil && filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

func setEnv(env []string, k, v string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

// noTerminal keeps runner's terminal from the command: a terminal as
// stdin is replaced by /dev/null (nothing the person types goes to the
// step), one as stdout or stderr by a pipe that runner copies to it.
func noTerminal(cmd *exec.Cmd) {
	if f, ok := cmd.Stdin.(*os.File); ok && isTerminal(int(f.Fd())) {
		cmd.Stdin = nil
	}
	for _, w := range []*io.Writer{&cmd.Stdout, &cmd.Stderr} {
		if f, ok := (*w).(*os.File); ok && isTerminal(int(f.Fd())) {
			*w = struct{ io.Writer }{f} // not an *os.File: exec copies through a pipe
		}
	}
}

// isTerminal reports whether fd is a terminal.
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// kernel is what the running kernel gives the sandbox.
type kernel struct {
	// namespaces: why a sandbox cannot be set up at all (nil: it can).
	namespaces error
	// landlock is the Landlock ABI (0: none).
	landlock int
	// seccomp: why no seccomp filter can be installed (nil: it can).
	seccomp error
}

// kernelProbe says what the kernel gives; tests stand in one that lacks
// something.
var kernelProbe = probeKernel

var errNoSeccompArch = errors.New("no seccomp filter is known for this architecture")

var (
	probeOnce sync.Once
	probed    kernel
)

// probeKernel sets a sandbox up once, running nothing in it, and says
// what failed. Its answer is kept: the kernel does not change under a run.
func probeKernel() kernel {
	probeOnce.Do(func() {
		probed.landlock = landlockABI()
		if auditArch == 0 {
			probed.seccomp = fmt.Errorf("%w: a seccomp filter (%v)", ErrUnavailable, errNoSeccompArch)
		}
		probed.namespaces = runProbe(probed)
	})
	return probed
}

// landlockABI is the Landlock ABI version of the running kernel (0: none).
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

func runProbe(k kernel) error {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return fmt.Errorf("%w: user namespaces are disabled (sysctl user.max_user_namespaces is 0)", ErrUnavailable)
	}
	tmp, err := os.MkdirTemp("", "runner-sandbox-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// As root the probe's root is mapped as a step's is.
	m := identity()
	if m.uidHost == 0 {
		m = rootMapping()
		if err := chownPrivate(tmp, m); err != nil {
			return err
		}
	}
	js, _ := json.Marshal(config{Dir: tmp, Write: []string{tmp}, Landlock: k.landlock, Probe: true, NoSeccomp: k.seccomp != nil, Mapped: m.mapped})
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{helperArg0, helperArg1, string(js)}, Dir: tmp,
		ExtraFiles: []*os.File{w}, SysProcAttr: &syscall.SysProcAttr{}}
	if m.mapped {
		cmd.Dir = "/"
	}
	namespaces(cmd.SysProcAttr, false, m)
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("%w: cannot create user, mount, PID and network namespaces: %v "+
			"(are unprivileged user namespaces allowed? sysctl kernel.unprivileged_userns_clone, "+
			"user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns; inside a container, its seccomp profile)", ErrUnavailable, err)
	}
	msg, _ := io.ReadAll(r)
	werr := cmd.Wait()
	line := strings.TrimSpace(string(msg))
	if rest, ok := strings.CutPrefix(line, "error "); ok {
		return fmt.Errorf("%w: %s", ErrUnavailable, rest)
	}
	if line != "ok" {
		return fmt.Errorf("%w: the sandbox's helper ended without setting up (%v; said %q)", ErrUnavailable, werr, line)
	}
	return nil
}

// errHelper is returned by helper steps; it names the step that failed.
type errHelper struct {
	what string
	err  error
}

func (e *errHelper) Error() string { return e.what + ": " + e.err.Error() }
func (e *errHelper) Unwrap() error { return e.err }
