//go:build unix

package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// shDefaultPath is dash's PATH when the environment has none.
const shDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// lookPath finds name as sh would: as given when it holds a slash, else
// in each PATH entry in turn (an empty one is the directory the command
// runs in), the first regular file with an execute bit. Looked up each
// time, as sh does, so a program installed by an earlier step is found.
func lookPath(name string, env []string, dir string) (string, bool) {
	at := func(p string) string {
		if filepath.IsAbs(p) || dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}
	if strings.Contains(name, "/") {
		return name, executable(at(name))
	}
	path, ok := lastEnv(env, "PATH")
	if !ok {
		path = shDefaultPath
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if executable(at(p)) {
			if !filepath.IsAbs(p) {
				p = at(p)
			}
			return p, true
		}
	}
	return "", false
}

func executable(p string) bool {
	var st syscall.Stat_t
	return syscall.Stat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Mode&0o111 != 0
}

// lastEnv is the value the environment gives name (its last entry: the
// one sh and os/exec keep).
func lastEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// shEnv is the environment sh would give its command: entries whose
// names are not shell names dropped, PWD kept when it names the
// directory the command runs in, else set to that directory's path with
// symbolic links resolved.
func shEnv(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if ok && shName(name) && name != "PWD" {
			out = append(out, kv)
		}
	}
	return append(out, "PWD="+shPWD(env, dir))
}

func shName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func shPWD(env []string, dir string) string {
	if dir == "" {
		dir = "."
	}
	var here syscall.Stat_t
	if syscall.Stat(dir, &here) == nil {
		if pwd, ok := lastEnv(env, "PWD"); ok && filepath.IsAbs(pwd) {
			var st syscall.Stat_t
			if syscall.Stat(pwd, &st) == nil && st.Dev == here.Dev && st.Ino == here.Ino {
				return pwd
			}
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// shSignalMessage is what dash prints when its command dies of sig: its
// description, and whether a core was dumped; none for SIGINT and
// SIGPIPE.
func shSignalMessage(sig syscall.Signal, core bool) string {
	if sig == syscall.SIGINT || sig == syscall.SIGPIPE {
		return ""
	}
	msg := sig.String()
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	if core {
		msg += " (core dumped)"
	}
	return msg + "\n"
}

// directCmd is the command that starts argv without a shell in dir with
// env, and the environment sh would have given it; nil when the program
// is not found as sh would find it (sh -c then runs the script).
func directCmd(argv, env []string, dir string) *exec.Cmd {
	path, ok := lookPath(argv[0], env, dir)
	if !ok {
		return nil
	}
	return &exec.Cmd{Path: path, Args: argv, Env: shEnv(env, dir)}
}

// shSignaled is how sh reports a command that died of a signal runner
// did not send: exit status 128+n, no signal, and the message it prints.
func shSignaled(ps *os.ProcessState) (code int, signal, msg string) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		c, sig := exitStatus(ps)
		return c, sig, ""
	}
	return 128 + int(ws.Signal()), "", shSignalMessage(ws.Signal(), ws.CoreDump())
}
