package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// init turns this process into the sandbox's helper when runner started
// it as one (argv[0] and argv[1] say so): it never returns then. Being an
// init, it runs before main in every binary that links the package (the
// runner, test binaries), and before any other package's init that comes
// after this one, which it does not need.
func init() {
	if len(os.Args) == 2 && os.Args[0] == helperArg0 && os.Args[1] == helperUsernsArg {
		holdUserns()
	}
	if len(os.Args) < 3 || os.Args[0] != helperArg0 || os.Args[1] != helperArg1 {
		return
	}
	helperMain(os.Args[2])
}

// helperMain is the sandbox's first process, PID 1 of its PID namespace,
// already in its new user, mount, network, IPC and UTS namespaces. It
// reports on fd 3 ("ok", "exit N", "signal N" or "error MESSAGE") and
// exits; it never returns.
func helperMain(arg string) {
	// Everything that confines the command is per thread (capabilities,
	// no_new_privs, Landlock) and reaches the command through fork from
	// this thread.
	runtime.LockOSThread()
	unix.CloseOnExec(3)
	status := os.NewFile(3, "status")
	// Only fds 0-2 reach the command: not one runner inherited without
	// close-on-exec (a terminal, a socket of the person's session).
	closeInherited()
	fail := func(err error) {
		fmt.Fprintf(status, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(125)
	}
	// Signals for which init has no handler are not delivered to it; with
	// handlers, a SIGTERM to the step's process group does not end the
	// helper before its command, and one that comes before the command
	// exists is kept for it. Handlers do not survive the command's execve.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	var cfg config
	if err := json.Unmarshal([]byte(arg), &cfg); err != nil {
		fail(fmt.Errorf("helper's configuration: %w", err))
	}
	// The helper holds capabilities in the sandbox's user namespace; the
	// command, which has none, must not be able to trace it or read it.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	if err := setUp(&cfg); err != nil {
		fail(err)
	}
	if err := dropPrivileges(&cfg); err != nil {
		fail(err)
	}
	if cfg.Probe {
		fmt.Fprintln(status, "ok")
		os.Exit(0)
	}
	p, err := os.StartProcess(cfg.Path, cfg.Args, &os.ProcAttr{Env: os.Environ(), Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		fail(fmt.Errorf("starting %s: %w", cfg.Path, err))
	}
	// A signal to the step's group that came while the sandbox was being
	// set up (a timeout) is the command's: it did not exist to get it.
	// Later ones reach it directly, as a member of the group.
	for pending := true; pending; {
		select {
		case sig := <-sigs:
			p.Signal(sig)
		default:
			pending = false
		}
	}
	go func() {
		for range sigs {
		}
	}()
	// As init, reap every orphan; the command's status is the answer.
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			fail(fmt.Errorf("waiting for %s: %w", cfg.Path, err))
		}
		if pid != p.Pid {
			continue
		}
		// Leaving ends every process left in the namespace (the kernel
		// kills them when its init exits).
		if ws.Signaled() {
			fmt.Fprintf(status, "signal %d\n", int(ws.Signal()))
			os.Exit(128 + int(ws.Signal()))
		}
		fmt.Fprintf(status, "exit %d\n", ws.ExitStatus())
		os.Exit(ws.ExitStatus())
	}
}

// setUp makes the sandbox's file system and network: mounts private to
// it; the writable paths bound on themselves (or their idmapped trees
// moved there); every other mount read-only; a minimal /dev, a fresh
// /proc of the new PID namespace; the loopback up.
func setUp(cfg *config) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return &errHelper{"making mounts private (mount namespace)", err}
	}
	trees := map[string]int{}
	for i, t := range cfg.Trees {
		trees[t] = 4 + i
	}
	for i, r := range cfg.Reach {
		trees[r] = 4 + len(cfg.Trees) + i
	}
	var covers []string
	if cfg.Mapped {
		var err error
		if covers, err = coverBlocked(cfg, trees); err != nil {
			return err
		}
	}
	// The program's install and read paths the mapped root could not
	// reach, read-only copies, in place before the write paths (one of
	// which may lie inside them).
	for _, r := range cfg.Reach {
		fd := trees[r]
		err := unix.MoveMount(fd, "", unix.AT_FDCWD, r, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(fd)
		if err != nil {
			return &errHelper{"mounting " + r + " read-only (reached)", err}
		}
	}
	// Bound before the rest turns read-only, the writable paths keep the
	// read-write flag of the mount they are on.
	for _, w := range cfg.Write {
		if fd, ok := trees[w]; ok {
			err := unix.MoveMount(fd, "", unix.AT_FDCWD, w, unix.MOVE_MOUNT_F_EMPTY_PATH)
			unix.Close(fd)
			if err != nil {
				return &errHelper{"mounting " + w + " writable (idmapped)", err}
			}
			continue
		}
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return &errHelper{"bind-mounting " + w + " writable", err}
		}
	}
	// Runner's own files inside them stay read-only; a socket is covered
	// (connecting to one needs no writable file system). One the mapped
	// root cannot reach needs neither.
	for _, r := range cfg.ReadOnly {
		if err := unix.Mount(r, r, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			if cfg.Mapped && errUnreachable(err) {
				continue
			}
			return &errHelper{"bind-mounting " + r + " read-only", err}
		}
		if err := remount(r, true); err != nil {
			return err
		}
	}
	for _, h := range cfg.Hide {
		if err := unix.Mount("/dev/null", h, "", unix.MS_BIND, ""); err != nil {
			if cfg.Mapped && errUnreachable(err) {
				continue
			}
			return &errHelper{"hiding " + h, err}
		}
	}
	points, err := mountPoints()
	if err != nil {
		return err
	}
	for _, mp := range points {
		if under(mp, cfg.Write) || under(mp, []string{"/proc", "/dev"}) {
			continue // writable, or replaced below
		}
		if under(mp, covers) && !slices.Contains(covers, mp) {
			continue // hidden by a cover: its path now names the cover's directory
		}
		if err := remount(mp, true); err != nil {
			return err
		}
	}
	if err := makeDev(); err != nil {
		return err
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return &errHelper{"mounting /proc of the PID namespace", err}
	}
	if err := hardenProc(); err != nil {
		return err
	}
	if !cfg.Network {
		if err := loopbackUp(); err != nil {
			return err
		}
		if cfg.Endpoint != "" {
			if err := listenEndpoint(cfg); err != nil {
				return err
			}
		}
	}
	unix.Sethostname([]byte("sandbox"))
	// The command's directory, as seen through the new mounts (the
	// helper's own working directory is still the one under them).
	if err := os.Chdir(cfg.Dir); err != nil {
		return &errHelper{"entering " + cfg.Dir, err}
	}
	return nil
}

// coverBlocked makes the write paths reachable for the mapped root where
// a directory above one only root may search (root's home, a 0700
// temporary directory): that directory is covered by a read-only tmpfs
// holding only the way to the write paths under it, so the step reaches
// them and sees nothing else there, as it could not before.
func coverBlocked(cfg *config, trees map[string]int) ([]string, error) {
	var blocked []string
	paths := append(append([]string(nil), cfg.Write...), cfg.Reach...)
	for _, w := range paths {
		if b := blockedAncestor(w, cfg.Trees); b != "" {
			blocked = append(blocked, b)
		}
	}
	sort.Slice(blocked, func(i, j int) bool { return len(blocked[i]) < len(blocked[j]) })
	var covers []string
	for _, b := range blocked {
		if !under(b, covers) {
			covers = append(covers, b)
		}
	}
	for _, c := range covers {
		if err := unix.Mount("tmpfs", c, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
			return nil, &errHelper{"covering " + c + " (only root may search it)", err}
		}
		for _, w := range paths {
			if !under(w, []string{c}) {
				continue
			}
			var err error
			if fd, ok := trees[w]; ok && !isDir(fd) {
				if err = os.MkdirAll(filepath.Dir(w), 0o755); err == nil {
					err = os.WriteFile(w, nil, 0o644)
				}
			} else {
				err = os.MkdirAll(w, 0o755)
			}
			if err != nil {
				return nil, &errHelper{"making the way to " + w, err}
			}
		}
	}
	return covers, nil
}

// isDir reports whether fd is a directory.
func isDir(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// mountPoints lists the mount points of this mount namespace, parents
// first, without repeats.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, &errHelper{"reading /proc/self/mountinfo", err}
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if !seen[mp] {
			seen[mp] = true
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Count(out[i], "/") < strings.Count(out[j], "/") || (strings.Count(out[i], "/") == strings.Count(out[j], "/") && out[i] < out[j])
	})
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
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

// under reports whether p is one of dirs or inside one.
func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// remount makes the mount at mp read-only (or read-write), keeping the
// flags the kernel locks for a less privileged user namespace (nosuid,
// nodev, noexec, the atime ones), which a remount must repeat.
func remount(mp string, ro bool) error {
	var st unix.Statfs_t
	if err := unix.Statfs(mp, &st); err != nil {
		if err == unix.ENOENT || err == unix.EACCES {
			return nil // not reachable from here, so not writable either
		}
		return &errHelper{"statfs " + mp, err}
	}
	var flags uintptr = unix.MS_REMOUNT | unix.MS_BIND
	for _, f := range []struct{ st, ms int64 }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if int64(st.Flags)&f.st != 0 { // Flags is int32 on 32-bit systems
			flags |= uintptr(f.ms)
		}
	}
	if ro {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("", mp, "", flags, ""); err != nil {
		return &errHelper{"remounting " + mp + " read-only", err}
	}
	return nil
}

// procReadOnly are the kernel's own settings and controls in /proc,
// global to the host (not to the sandbox's namespaces): read-only.
// procMasked give the kernel's memory, keys and timers away: covered by
// an empty file or directory.
var (
	procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/driver"}
	procMasked   = []string{"/proc/kcore", "/proc/kmsg", "/proc/keys", "/proc/key-users", "/proc/timer_list",
		"/proc/sched_debug", "/proc/latency_stats", "/proc/acpi", "/proc/scsi", "/proc/asound", "/proc/kpagecount",
		"/proc/kpageflags", "/proc/kpagecgroup", "/proc/config.gz"}
)

// hardenProc makes the fresh /proc's host-global files read-only or
// empty. Its process files stay writable (a process's own oom_score_adj,
// a nested user namespace's uid_map).
func hardenProc() error {
	for _, p := range procReadOnly {
		if _, err := os.Lstat(p); err != nil {
			continue // not in this kernel
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return &errHelper{"binding " + p, err}
		}
		if err := remount(p, true); err != nil {
			return err
		}
	}
	for _, p := range procMasked {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0555")
		} else {
			err = unix.Mount("/dev/null", p, "", unix.MS_BIND, "")
		}
		if err != nil {
			return &errHelper{"covering " + p, err}
		}
	}
	return nil
}

// closeInherited marks every fd above 3 close-on-exec, and puts /dev/null
// in place of a terminal on fds 0-2: no fd on the person's terminal
// reaches the command, to type into it or read from it (Wrap already
// keeps runner's own from it; this holds for any caller).
func closeInherited() {
	if err := unix.CloseRange(4, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		for fd := 4; fd < 1024; fd++ { // kernels before 5.11
			unix.CloseOnExec(fd)
		}
	}
	for fd := 0; fd <= 2; fd++ {
		if !isTerminal(fd) {
			continue
		}
		null, err := unix.Open("/dev/null", unix.O_RDWR, 0)
		if err != nil {
			unix.Close(fd)
			continue
		}
		unix.Dup3(null, fd, 0)
		unix.Close(null)
	}
}

// makeDev puts a minimal /dev in place: a read-only tmpfs holding the host's
// harmless devices (bound from it), links to /proc/self/fd, a private
// /dev/shm and a new /dev/pts instance. No disk, no /dev/mem, no
// /dev/kmsg: a command running as root with no capabilities could still
// open what its uid owns.
func makeDev() error {
	// No tty: the command has no controlling terminal, and the person's
	// is not to be reached by name.
	devices := []string{"null", "zero", "full", "random", "urandom"}
	// The host's devices, held open before the tmpfs covers them.
	fds := map[string]int{}
	for _, d := range devices {
		fd, err := unix.Open("/dev/"+d, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err == nil {
			fds[d] = fd
		}
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return &errHelper{"mounting a tmpfs on /dev", err}
	}
	for _, d := range devices {
		fd, ok := fds[d]
		if !ok {
			continue
		}
		p := "/dev/" + d
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			return &errHelper{"creating " + p, err}
		}
		if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(fd), p, "", unix.MS_BIND, ""); err != nil {
			return &errHelper{"binding " + p, err}
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"} {
		if err := os.Symlink(target, filepath.Join("/dev", name)); err != nil {
			return &errHelper{"linking /dev/" + name, err}
		}
	}
	for _, d := range []string{"shm", "pts"} {
		if err := os.Mkdir("/dev/"+d, 0o755); err != nil {
			return &errHelper{"creating /dev/" + d, err}
		}
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return &errHelper{"mounting /dev/shm", err}
	}
	// A pseudo-terminal for programs that want one; not essential.
	unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
	if err := remount("/dev", true); err != nil {
		return err
	}
	return nil
}

// loopbackUp brings up the network namespace's own lo: 127.0.0.1 then
// reaches listeners inside the sandbox (a test's own server), never the
// host's.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return &errHelper{"loopback socket", err}
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return &errHelper{"loopback", err}
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return &errHelper{"reading lo's flags", err}
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return &errHelper{"bringing lo up", err}
	}
	return nil
}

// Securebits (linux/securebits.h): uid 0 gains no capabilities at execve,
// and none of this can be undone.
const (
	secNoRoot               = 1 << 0
	secNoRootLocked         = 1 << 1
	secNoSetuidFixup        = 1 << 2
	secNoSetuidFixupLocked  = 1 << 3
	secKeepCapsLocked       = 1 << 5
	secNoCapAmbientRaise    = 1 << 6
	secNoCapAmbientRaiseLck = 1 << 7
)

// dropPrivileges leaves this thread, and so the command it starts, with no
// way to gain privileges: no_new_privs (setuid bits and file capabilities
// give nothing), securebits against uid 0's capabilities, empty bounding,
// ambient, inheritable, permitted and effective sets, then Landlock.
func dropPrivileges(cfg *config) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return &errHelper{"setting no_new_privs", err}
	}
	bits := secNoRoot | secNoRootLocked | secNoSetuidFixup | secNoSetuidFixupLocked |
		secKeepCapsLocked | secNoCapAmbientRaise | secNoCapAmbientRaiseLck
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return &errHelper{"setting securebits", err}
	}
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return &errHelper{"dropping capability " + strconv.Itoa(c) + " from the bounding set", err}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return &errHelper{"clearing ambient capabilities", err}
	}
	if cfg.Landlock > 0 {
		if err := landlock(cfg); err != nil {
			return err
		}
	}
	if !cfg.NoSeccomp {
		if err := installSeccomp(!cfg.Network); err != nil {
			return err
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return &errHelper{"dropping capabilities", err}
	}
	return nil
}

// lastCap is the highest capability this kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return unix.CAP_LAST_CAP
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return unix.CAP_LAST_CAP
	}
	return n
}
