package harden

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const secret = "sk-harden-SECRET-8d1f2e3a"

// The test binary plays two roles besides the tests: "runner" (holds a
// secret in its environment, hardens itself or not, and waits) and
// "reader" (a step: tries every route to the runner's secret).
func TestMain(m *testing.M) {
	switch os.Getenv("HARDEN_ROLE") {
	case "runner":
		if os.Getenv("HARDEN_APPLY") == "1" {
			if err := ScrubEnv(); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			if err := Process(); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			if os.Getenv("SECRET") != secret {
				fmt.Println("error: the environment lost SECRET")
				os.Exit(1)
			}
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin) // until the test closes stdin
		os.Exit(0)
	case "reader":
		json.NewEncoder(os.Stdout).Encode(tryRoutes(os.Getenv("HARDEN_TARGET")))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// routes is what a reader got through each route to the runner.
type routes struct {
	EnvironRead   bool // /proc/PID/environ could be read
	EnvironSecret bool // ... and held the secret
	MemOpened     bool // /proc/PID/mem could be opened
	MemSecret     bool // the secret was found in the runner's memory
	Ptrace        bool // PTRACE_ATTACH succeeded
}

func tryRoutes(pidStr string) routes {
	var r routes
	pid, _ := strconv.Atoi(pidStr)
	if b, err := os.ReadFile("/proc/" + pidStr + "/environ"); err == nil {
		r.EnvironRead = true
		r.EnvironSecret = bytes.Contains(b, []byte(secret))
	}
	if f, err := os.Open("/proc/" + pidStr + "/mem"); err == nil {
		r.MemOpened = true
		r.MemSecret = memHas(f, pidStr)
		f.Close()
	}
	runtime.LockOSThread()
	if err := unix.PtraceAttach(pid); err == nil {
		r.Ptrace = true
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		unix.PtraceDetach(pid)
	}
	return r
}

// memHas searches the runner's readable, writable mappings for the secret.
func memHas(mem *os.File, pid string) bool {
	maps, err := os.ReadFile("/proc/" + pid + "/maps")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[1], "rw") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b-a > 1<<28 {
			continue
		}
		buf := make([]byte, b-a)
		n, _ := mem.ReadAt(buf, int64(a))
		if bytes.Contains(buf[:n], []byte(secret)) {
			return true
		}
	}
	return false
}

// publicCopy copies the test binary where any user may run it.
func publicCopy(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // t.TempDir makes both 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "harden.test")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func as(cmd *exec.Cmd, uid int) {
	if uid != os.Getuid() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
}

// A step, as the runner's own non-root user or as another, gets nothing of
// runner's secrets: not from /proc/PID/environ, not from /proc/PID/mem, not
// with ptrace. As root it may read the environment block, which no longer
// holds the secret. The unhardened row shows that the same reader gets the
// secret otherwise (it is what the old code allowed).
func TestStepCannotReachRunnersSecrets(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the runner and the step as other users")
	}
	bin := publicCopy(t)
	const user, other = 1000, 65534
	for _, tc := range []struct {
		name              string
		harden            bool
		runnerUID, reader int
		want              routes
	}{
		{"unhardened, same user (the old leak)", false, user, user,
			routes{EnvironRead: true, EnvironSecret: true, MemOpened: true, MemSecret: true, Ptrace: true}},
		{"same non-root user", true, user, user, routes{}},
		{"another non-root user", true, user, other, routes{}},
		{"root reader: the environ block is blank", true, user, 0,
			// Root may read anything of an unsandboxed runner; the block
			// it reads is blank, but memory holds the key (docs/safety.md).
			routes{EnvironRead: true, MemOpened: true, MemSecret: true, Ptrace: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runner := exec.Command(bin)
			runner.Env = []string{"HARDEN_ROLE=runner", "SECRET=" + secret, "HARDEN_APPLY=" + map[bool]string{true: "1", false: "0"}[tc.harden]}
			as(runner, tc.runnerUID)
			stdin, _ := runner.StdinPipe()
			out, _ := runner.StdoutPipe()
			if err := runner.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { stdin.Close(); runner.Wait() }()
			line, _ := bufio.NewReader(out).ReadString('\n')
			if line != "ready\n" {
				t.Fatalf("runner role: %q", line)
			}
			reader := exec.Command(bin)
			reader.Env = []string{"HARDEN_ROLE=reader", "HARDEN_TARGET=" + strconv.Itoa(runner.Process.Pid)}
			as(reader, tc.reader)
			b, err := reader.Output()
			if err != nil {
				t.Fatalf("reader: %v", err)
			}
			var got routes
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("reader said %q: %v", b, err)
			}
			if got != tc.want {
				t.Errorf("routes to the runner: got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The environment a hardened process sees and passes on is unchanged.
func TestScrubEnvKeepsTheEnvironment(t *testing.T) {
	if os.Getenv("HARDEN_ROLE") != "" {
		t.Skip()
	}
	bin := publicCopy(t)
	cmd := exec.Command(bin, "-test.run", "^TestScrubEnvChild$")
	cmd.Env = []string{"HARDEN_CHILD=1", "A=1", "B=two words", "EMPTY=", "GODEBUG=madvdontneed=1"}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestScrubEnvChild(t *testing.T) {
	if os.Getenv("HARDEN_CHILD") != "1" {
		t.Skip("run by TestScrubEnvKeepsTheEnvironment")
	}
	if err := ScrubEnv(); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"A": "1", "B": "two words", "EMPTY": "", "GODEBUG": "madvdontneed=1"} {
		if got, ok := os.LookupEnv(k); !ok || got != v {
			t.Errorf("%s = %q, %v; want %q", k, got, ok, v)
		}
	}
	out, err := exec.Command("/bin/sh", "-c", `printf '%s|%s' "$A" "$B"`).Output()
	if err != nil || string(out) != "1|two words" {
		t.Errorf("a child saw %q (%v)", out, err)
	}
	b, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		t.Fatal(err)
	}
	if len(bytes.Trim(b, "\x00")) != 0 {
		t.Errorf("/proc/self/environ still shows %q", b)
	}
}
