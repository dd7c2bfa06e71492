package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// injectScript tries to type into the terminal of whoever started runner:
// TIOCSTI (and TIOCLINUX's paste) on /dev/tty, on fds 0-2 and on every fd
// it holds. The marker it types is never printed by the script itself, so
// seeing it on the terminal means it was typed (echoed by the line
// discipline, and waiting in the input queue for the shell).
const injectScript = `
import os, fcntl, termios
mark = "".join(reversed("KRAM-DETCEJNI")) + "\n"
TIOCLINUX = 0x541C
def inject(fd, what):
    try:
        for c in mark:
            fcntl.ioctl(fd, termios.TIOCSTI, c.encode())
        print("injected through", what, flush=True)
    except OSError as e:
        print("TIOCSTI refused on", what, e.strerror, flush=True)
    try:
        fcntl.ioctl(fd, TIOCLINUX, bytes([3]))
        print("pasted through", what, flush=True)
    except OSError:
        pass
try:
    tty = os.open("/dev/tty", os.O_RDWR)
    print("opened /dev/tty", flush=True)
    inject(tty, "/dev/tty")
except OSError as e:
    print("cannot open /dev/tty:", e.strerror, flush=True)
for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
    inject(fd, "fd %d" % fd)
try:
    print("read from fd 0:", os.read(0, 1), flush=True)
except OSError as e:
    print("cannot read fd 0:", e.strerror, flush=True)
`

const injected = "INJECTED-MARK"

// TestNoTerminal starts itself with a pseudo-terminal as its controlling
// terminal and as its stdin, stdout and stderr (runner run from a shell),
// with one more fd on the terminal left open without close-on-exec (one
// runner inherited), then runs injectScript sandboxed: nothing it types
// reaches the terminal, it cannot open /dev/tty, and it cannot read the
// person's keystrokes. The control runs the script unconfined, where the
// typing works.
func TestNoTerminal(t *testing.T) {
	if mode := os.Getenv("SANDBOX_PTY_CHILD"); mode != "" {
		ptyChild(t, mode)
		return
	}
	python := systemTool(t, "python3")
	for _, tc := range []struct {
		mode     string
		injected bool
	}{
		{"sandboxed", false},
		{"control", true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			out := onPty(t, tc.mode, python, "x\n")
			got := strings.Contains(out, injected) || strings.Contains(out, "injected through") || strings.Contains(out, "pasted through")
			if got != tc.injected {
				t.Errorf("typed into the terminal: %v, want %v; the terminal shows:\n%s", got, tc.injected, out)
			}
			if !strings.Contains(out, "script done") {
				t.Errorf("the script did not run to its end:\n%s", out)
			}
			if tc.injected {
				return
			}
			if !strings.Contains(out, "cannot open /dev/tty:") || strings.Contains(out, "opened /dev/tty") {
				t.Errorf("the step could open /dev/tty:\n%s", out)
			}
			if strings.Contains(out, "read from fd 0: b'x") {
				t.Errorf("the step read what was typed on the terminal:\n%s", out)
			}
		})
	}
}

// onPty runs this test as ptyChild in mode on a new pseudo-terminal,
// types typed on it, and returns what the terminal showed.
func onPty(t *testing.T, mode, python, typed string) string {
	t.Helper()
	master, slave := openPty(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestNoTerminal$", "-test.v")
	cmd.Env = append(os.Environ(), "SANDBOX_PTY_CHILD="+mode, "PYTHON="+python)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	// Keystrokes waiting on the terminal, which a step must not read.
	master.WriteString(typed)
	var shown bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&shown, master); close(done) }() // ends with EIO once the last slave fd closes
	werr := cmd.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("the terminal stayed open after the child exited")
	}
	master.Close()
	if werr != nil {
		t.Errorf("child: %v\n%s", werr, shown.String())
	}
	return shown.String()
}

// ptyChild is the process whose controlling terminal is the pty.
func ptyChild(t *testing.T, mode string) {
	// An fd on the terminal that runner did not open and so did not mark
	// close-on-exec.
	if _, err := syscall.Open("/dev/tty", syscall.O_RDWR, 0); err != nil {
		t.Fatalf("the child has no controlling terminal: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Getenv("PYTHON"), "-c", injectScript+"\nprint('script done', flush=True)\n")
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if mode == "control" {
		// What the script reads of stdin is kept from the terminal's
		// echo: the marker is what counts.
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		return
	}
	s, err := Wrap(cmd, Policy{Write: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = cmd.Start()
	s.Started()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	code, sig, err := s.Finish(cmd.ProcessState)
	if err != nil || code != 0 || sig != "" {
		t.Fatalf("sandboxed script: exit %d %q %v", code, sig, err)
	}
}

// openPty opens a new pseudo-terminal's master and slave.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	master = os.NewFile(uintptr(m), "ptmx")
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// TestKernelInterfaces has sandboxed steps try to change what belongs to
// the host's kernel or act as the host's root: each attempt fails, and
// the host's values are as they were. As root the sandbox's uid 0 is an
// unprivileged host id, so the kernel's checks on "uid 0" fail too;
// TestConfinementAsUser runs this again as an ordinary user.
func TestKernelInterfaces(t *testing.T) {
	work := t.TempDir()
	root := os.Getuid() == 0
	// A Unix socket only its owner may use (Docker's is root's and its
	// group's): as root, what a step reaches with network: true shows
	// whether it acts as the host's root.
	sockDir := t.TempDir()
	sock := filepath.Join(sockDir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(sock, 0o600)
	reachable(sockDir)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// A service that anyone may reach and that trusts root by the peer's
	// credentials (SO_PEERCRED), as systemd's, polkit's and Docker's do.
	credSock := filepath.Join(sockDir, "cred")
	cln, err := net.Listen("unix", credSock)
	if err != nil {
		t.Fatal(err)
	}
	defer cln.Close()
	os.Chmod(credSock, 0o666)
	go func() {
		for {
			c, err := cln.Accept()
			if err != nil {
				return
			}
			if raw, err := c.(*net.UnixConn).SyscallConn(); err == nil {
				var cred *unix.Ucred
				raw.Control(func(fd uintptr) { cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
				if cred != nil && cred.Uid == 0 {
					io.WriteString(c, "ESCAPED: the host's service took the step for root\n")
				} else if cred != nil {
					io.WriteString(c, "served uid "+strconv.Itoa(int(cred.Uid))+"\n")
				}
			}
			c.Close()
		}
	}()
	// A file only root may read, in a directory anyone may search,
	// listed under read: so only the file's own mode keeps it.
	private := t.TempDir()
	reachable(private)
	os.WriteFile(filepath.Join(private, "key"), []byte(secret), 0o600)
	python := systemTool(t, "python3")
	hostname, _ := os.Hostname()
	const burst = "/proc/sys/kernel/printk_ratelimit_burst"
	before, err := os.ReadFile(burst)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if after, _ := os.ReadFile(burst); !bytes.Equal(after, before) {
			os.WriteFile(burst, before, 0)
		}
	}()
	// rewrite writes a file's own value back: a harmless write that only
	// root of the host may make.
	rewrite := func(paths ...string) string {
		return `for f in ` + strings.Join(paths, " ") + `; do [ -e "$f" ] || continue; ` +
			`v=$(cat "$f") && printf '%s\n' "$v" > "$f" && echo "ESCAPED: wrote $f"; done; true`
	}
	strict := Policy{Write: []string{work}}
	network := Policy{Write: []string{work}, Network: true}
	for _, tc := range []struct {
		name     string
		policy   Policy
		script   string
		rootOnly bool
	}{
		{"a host-global sysctl", strict, `v=$(cat ` + burst + `); echo $((v+1)) > ` + burst + ` && echo "ESCAPED: sysctl"; true`, false},
		{"sysctls, rewritten", strict, rewrite("/proc/sys/kernel/printk_ratelimit", "/proc/sys/vm/stat_interval", "/proc/sys/fs/pipe-max-size", "/proc/sys/kernel/core_pattern"), false},
		{"a host sysctl of the host's network", network, rewrite("/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/core/somaxconn"), false},
		{"sysrq, irq, bus", strict, `echo h > /proc/sysrq-trigger && echo "ESCAPED: sysrq"; ` + rewrite("/proc/irq/default_smp_affinity", "/proc/irq/0/smp_affinity"), false},
		{"/sys/kernel", strict, rewrite("/sys/kernel/rcu_expedited", "/sys/kernel/profiling", "/sys/kernel/uevent_helper", "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan"), false},
		{"a new /proc or sysfs, a tmpfs", strict, `mkdir m; mount -t proc proc m && echo "ESCAPED: proc"; mount -t sysfs sys m && echo "ESCAPED: sysfs"; mount -t tmpfs t m && echo "ESCAPED: tmpfs"; true`, false},
		{"remount /proc read-write", strict, `mount -o remount,rw /proc/sys && echo "ESCAPED: remount"; umount /proc/sys && echo "ESCAPED: umount"; true`, false},
		{"sethostname", strict, `hostname runner-sandbox-evil && echo "ESCAPED: hostname"; ` + python + ` -c 'import socket; socket.sethostname("runner-sandbox-evil"); print("ESCAPED: sethostname")'; true`, false},
		{"/proc/kcore and kernel memory", strict, `head -c1 /proc/kcore >/dev/null && echo "ESCAPED: kcore"; head -c1 /dev/mem >/dev/null && echo "ESCAPED: mem"; cat /proc/keys | grep -q . && echo "ESCAPED: keys"; true`, false},
		{"read a file only root may read", Policy{Write: []string{work}, Read: []string{private}},
			`cat ` + filepath.Join(private, "key") + ` && echo "ESCAPED: read"; [ -e /etc/shadow ] && head -c1 /etc/shadow >/dev/null && echo "ESCAPED: shadow"; true`, true},
		{"connect to a socket only root may use", network,
			python + ` -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print("ESCAPED: connected")' ` + sock + `; true`, true},
		{"a service that trusts root by its peer's uid", network,
			python + ` -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.makefile().read(), end="")' ` + credSock, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rootOnly && !root {
				t.Skip("what only host root may do: an ordinary user's sandbox never could")
			}
			out, errOut, code := run(t, tc.policy, work, tc.script)
			if strings.Contains(out, "ESCAPED") || code != 0 {
				t.Errorf("exit %d\n%s\nstderr:\n%s", code, out, errOut)
			}
			if after, _ := os.ReadFile(burst); !bytes.Equal(after, before) {
				t.Errorf("the host's %s changed: %q, was %q", burst, after, before)
				os.WriteFile(burst, before, 0)
			}
			if h, _ := os.Hostname(); h != hostname {
				t.Errorf("the host's name changed: %q, was %q", h, hostname)
			}
		})
	}
}

// TestStrictRefusesWeakerKernel stands in kernels that lack what the
// sandbox takes: strict refuses the step and says what is missing;
// optional runs it as confined as the kernel allows and says what it
// lacked.
func TestStrictRefusesWeakerKernel(t *testing.T) {
	real := kernelProbe
	defer func() { kernelProbe = real }()
	for _, tc := range []struct {
		name     string
		lack     func(k *kernel)
		want     string
		confined bool // optional still confines
	}{
		{"no user namespaces", func(k *kernel) {
			k.namespaces = fmt.Errorf("%w: user namespaces are disabled (sysctl user.max_user_namespaces is 0)", ErrUnavailable)
		}, "user namespaces are disabled", false},
		{"no Landlock", func(k *kernel) { k.landlock = 0 }, "Landlock", true},
		{"no seccomp filter", func(k *kernel) {
			k.seccomp = fmt.Errorf("%w: a seccomp filter (%v)", ErrUnavailable, errNoSeccompArch)
		}, "seccomp", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := real()
			tc.lack(&k)
			kernelProbe = func() kernel { return k }
			dir := t.TempDir()
			_, err := Wrap(exec.Command("true"), Policy{Write: []string{dir}})
			if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "strict") {
				t.Errorf("strict: got %v, want a refusal naming %q", err, tc.want)
			}
			cmd := exec.Command("/bin/sh", "-c", "echo ran")
			cmd.Dir = dir
			s, err := Wrap(cmd, Policy{Write: []string{dir}, Optional: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			out, err := cmd.Output()
			s.Finish(cmd.ProcessState)
			rep := s.Report()
			if err != nil || string(out) != "ran\n" || rep.Active != tc.confined || !strings.Contains(rep.Missing, tc.want) {
				t.Errorf("optional: %q %v, report %+v", out, err, rep)
			}
		})
	}
}

// TestSeccompRefusesTerminalIoctls makes the step a terminal of its own
// (a pty of its /dev/pts, as its controlling terminal), on which TIOCSTI
// would work: the seccomp filter refuses it all the same, with or
// without network.
func TestSeccompRefusesTerminalIoctls(t *testing.T) {
	python := systemTool(t, "python3")
	script := python + ` -c '
import os, fcntl, termios
m, s = os.openpty()
os.setsid()
fcntl.ioctl(s, termios.TIOCSCTTY, 0)
try:
    fcntl.ioctl(s, termios.TIOCSTI, b"x")
    print("TIOCSTI typed")
except OSError as e:
    print("TIOCSTI refused:", e.strerror)
'`
	work := t.TempDir()
	for _, network := range []bool{false, true} {
		out, errOut, code := run(t, Policy{Write: []string{work}, Network: network}, work, script)
		if code != 0 || out != "TIOCSTI refused: Operation not permitted\n" {
			t.Errorf("network %v: %q (exit %d)\n%s", network, out, code, errOut)
		}
	}
}
