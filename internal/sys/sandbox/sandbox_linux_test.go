package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

const secret = "sk-SANDBOX-secret-51c9e0"

// run runs script with sh in a sandbox with policy p, in dir, and returns
// what it printed and its exit status.
func run(t *testing.T, p Policy, dir, script string, env ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	s, err := Wrap(cmd, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Report().Active {
		t.Fatalf("the sandbox is not active: %+v", s.Report())
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Start()
	s.Started()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	code, sig, err := s.Finish(cmd.ProcessState)
	if err != nil {
		t.Fatalf("sandbox: %v\n%s", err, e.String())
	}
	if sig != "" {
		t.Fatalf("killed by %s\n%s", sig, e.String())
	}
	return o.String(), e.String(), code
}

// TestConfinement runs hostile scripts in a sandbox and checks that each
// attempt is refused; each control row does the same without the
// confinement it tests, to prove the attempt would work otherwise. As
// root it also runs itself as an unprivileged user (TestConfinementAsUser).
func TestConfinement(t *testing.T) {
	work := t.TempDir()
	outside := t.TempDir()
	hidden := t.TempDir()
	os.WriteFile(filepath.Join(hidden, "secret.txt"), []byte(secret), 0o644)
	// What these rows test is the sandbox, not the modes of the test's
	// own directories (which as root its mapped root could not reach).
	reachable(work, outside, hidden)
	// Another process of ours (runner, another step) holding a secret.
	victim := exec.Command("sleep", "300")
	victim.Env = []string{"SECRET=" + secret}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()
	// A service of the host on 127.0.0.1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// A service of the host on a Unix socket (Docker's, an ssh agent...).
	sock := filepath.Join(outside, "s")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	os.Chmod(sock, 0o666) // a refusal is then the sandbox's, not the socket's mode
	go func() {
		for {
			c, err := uln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	python := systemTool(t, "python3")
	connectUnix := python + ` -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print("connected")' "$SOCK"`
	env := []string{"SOCK=" + sock, "OUT=" + outside, "HIDDEN=" + hidden, "VICTIM=" + strconv.Itoa(victim.Process.Pid),
		"RUNNER=" + strconv.Itoa(os.Getpid()), "PORT=" + port}
	strict := Policy{Write: []string{work}}

	for _, tc := range []struct {
		name   string
		policy Policy
		script string
		// escapes: the attempt is expected to work (a control row).
		escapes bool
		// created: a file the attempt would make on the host.
		created string
	}{
		{name: "write outside", policy: strict, script: `echo x > "$OUT/f"`, created: filepath.Join(outside, "f")},
		{name: "write /etc", policy: strict, script: `echo x > /etc/runner-sandbox-test`, created: "/etc/runner-sandbox-test"},
		{name: "write /tmp outside the private one", policy: strict, script: `echo x > /tmp/runner-sandbox-test`, created: "/tmp/runner-sandbox-test"},
		{name: "write through a symlink in the workdir", policy: strict, script: `ln -sf "$OUT" link && echo x > link/g`, created: filepath.Join(outside, "g")},
		{name: "move a file out", policy: strict, script: `echo x > mine && mv mine "$OUT/moved"`, created: filepath.Join(outside, "moved")},
		{name: "remount the root read-write", policy: strict, script: `mount -o remount,rw / && echo x > /etc/runner-sandbox-test`, created: "/etc/runner-sandbox-test"},
		{name: "remount in a nested user namespace", policy: strict,
			script: `unshare -Urm sh -c 'mount -o remount,rw / ; mount -o remount,rw "$OUT"; umount -l "$OUT"; echo x > "$OUT/nested"'`, created: filepath.Join(outside, "nested")},
		{name: "control: write the workdir and TMPDIR", policy: strict, script: `echo x > inside && echo x > "$TMPDIR/t"`, escapes: true},
		{name: "control: write a path the policy lists", policy: Policy{Write: []string{work, outside}}, script: `echo x > "$OUT/listed"`, escapes: true, created: filepath.Join(outside, "listed")},

		{name: "read another process's environ", policy: strict, script: `cat /proc/$VICTIM/environ`},
		{name: "read the parent's environ", policy: strict, script: `cat /proc/$RUNNER/environ /proc/$PPID/environ`},
		{name: "walk /proc for environments", policy: strict, script: `cat /proc/[0-9]*/environ /proc/[0-9]*/task/*/environ /proc/[0-9]*/cmdline; ls /proc | grep -qx "$VICTIM"  && echo "$VICTIM"`},
		{name: "signal a process outside", policy: strict, script: `kill -0 $VICTIM && echo SECRET=` + secret},
		{name: "control: without a sandbox the environ reads", script: `cat /proc/$VICTIM/environ`, escapes: true},

		{name: "connect to 127.0.0.1", policy: strict, script: `bash -c 'exec 3<>/dev/tcp/127.0.0.1/$PORT' && echo connected`},
		{name: "control: network true connects", policy: Policy{Write: []string{work}, Network: true},
			script: `bash -c 'exec 3<>/dev/tcp/127.0.0.1/$PORT' && echo connected`, escapes: true},

		{name: "connect to a host's Unix socket", policy: strict, script: connectUnix},
		{name: "control: network true reaches the Unix socket", policy: Policy{Write: []string{work}, Network: true}, script: connectUnix, escapes: true},

		{name: "gain capabilities", policy: strict,
			script: `grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status | tr -d '\t'`},
		{name: "read what the policy does not list", policy: Policy{Write: []string{work}, Read: []string{work}}, script: `cat "$HIDDEN/secret.txt"`},
		{name: "control: read all by default", policy: strict, script: `cat "$HIDDEN/secret.txt"`, escapes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut string
			if strings.HasPrefix(tc.name, "control: without") {
				c := exec.Command("/bin/sh", "-c", tc.script)
				c.Env = append(os.Environ(), env...)
				b, _ := c.Output()
				out = string(b)
			} else {
				out, errOut, _ = run(t, tc.policy, work, tc.script, env...)
			}
			leaked := strings.Contains(out, secret) || strings.Contains(out, "connected") || strings.Contains(out, "SECRET=")
			made := false
			if tc.created != "" {
				if _, err := os.Stat(tc.created); err == nil {
					made = true
					os.Remove(tc.created)
				}
			}
			if strings.HasPrefix(tc.name, "gain capabilities") {
				want := "CapPrm:0000000000000000\nCapEff:0000000000000000\nCapBnd:0000000000000000\nCapAmb:0000000000000000\nNoNewPrivs:1\n"
				if out != want {
					t.Errorf("capabilities in the sandbox:\n%s\nwant:\n%s", out, want)
				}
				return
			}
			if tc.escapes {
				if tc.created != "" && !made {
					t.Errorf("control: %s was not made (stderr %q)", tc.created, errOut)
				}
				// The client may be gone before the host's accept loop
				// counts its connection: wait for the count, not on it.
				if strings.HasPrefix(tc.name, "control: network") && (!leaked || !eventually(func() bool { return accepted.Load() > 0 })) {
					t.Errorf("control: no connection reached the host's listener (%q %q)", out, errOut)
				}
				if strings.Contains(tc.script, "environ") || strings.Contains(tc.script, "secret.txt") {
					if !leaked {
						t.Errorf("control: the secret was not read (%q %q)", out, errOut)
					}
				}
				accepted.Store(0)
				return
			}
			if leaked || made || accepted.Load() > 0 {
				t.Errorf("escaped: stdout %q, file made %v, connections %d; stderr:\n%s", out, made, accepted.Load(), errOut)
			}
		})
	}
}

// TestConfinementAsUser runs TestConfinement, TestSetuidGivesNothing,
// TestNoTerminal and TestKernelInterfaces as an unprivileged user (uid 1000), whose sandbox is set up without
// root: the user namespace maps its own uid, and the helper gets the
// capabilities it needs as ambient ones.
func TestConfinementAsUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("run as root, it runs the tests again as uid 1000")
	}
	bin := publicCopy(t)
	setuid := setuidID(t)
	cmd := exec.Command(bin, "-test.run", "^(TestConfinement|TestSetuidGivesNothing|TestPytestInside|TestNoTerminal|TestKernelInterfaces|TestSeccompRefusesTerminalIoctls)$", "-test.v")
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = []string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=" + filepath.Dir(bin), "SETUID_ID=" + setuid, "CI=" + os.Getenv("CI")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestConfinement") || !strings.Contains(string(out), "--- PASS: TestSetuidGivesNothing") ||
		!strings.Contains(string(out), "--- PASS: TestPytestInside") ||
		!strings.Contains(string(out), "--- PASS: TestNoTerminal") || !strings.Contains(string(out), "--- PASS: TestKernelInterfaces") {
		t.Fatalf("as uid 1000: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestSetuidGivesNothing runs a setuid-root program (a copy of id) in the
// sandbox as an unprivileged user: no_new_privs keeps its effective uid
// the user's. The control runs it outside, where it is root.
func TestSetuidGivesNothing(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("as root setuid-root gives nothing new; TestConfinementAsUser runs this as uid 1000")
	}
	bin := os.Getenv("SETUID_ID")
	if bin == "" {
		t.Skip("TestConfinementAsUser runs this with a setuid copy of id")
	}
	ctl, err := exec.Command(bin, "-u").Output()
	if err != nil || strings.TrimSpace(string(ctl)) != "0" {
		t.Fatalf("control: the setuid copy of id outside the sandbox says %q (%v), want 0", ctl, err)
	}
	out, _, code := run(t, Policy{Write: []string{t.TempDir()}}, t.TempDir(), bin+" -u")
	if code != 0 || strings.TrimSpace(out) != strconv.Itoa(os.Getuid()) {
		t.Errorf("setuid id in the sandbox: %q (exit %d), want %d", out, code, os.Getuid())
	}
}

// TestGoTestInside runs go test in a sandbox, on a module whose test
// serves HTTP on the sandbox's own loopback and writes a t.TempDir. The
// build cache stays the user's, as for go test itself (a fresh one would
// build the standard library for minutes); the policy lists it.
func TestGoTestInside(t *testing.T) {
	goBin := testtool.LookPath(t, "go", "Go itself")
	goEnv := func(name string) string {
		out, err := exec.Command(goBin, "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	mod := t.TempDir()
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(mod, "m_test.go"), []byte(`package m

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

func TestServes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") }))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "pong" {
		t.Fatalf("%q", b)
	}
	if err := os.WriteFile(t.TempDir()+"/x", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
`), 0o644)
	cache, modcache, home := goEnv("GOCACHE"), t.TempDir(), t.TempDir()
	out, errOut, code := run(t, Policy{Write: []string{mod, cache, modcache}}, mod, goBin+" test -count=1 ./...",
		"GOCACHE="+cache, "GOMODCACHE="+modcache, "HOME="+home, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off")
	if code != 0 || !strings.Contains(out, "ok ") {
		t.Errorf("go test in the sandbox: exit %d\n%s%s", code, out, errOut)
	}
}

// TestPytestInside runs pytest in a sandbox: it writes its cache in the
// project and a tmp_path under the private TMPDIR.
func TestPytestInside(t *testing.T) {
	home := t.TempDir()
	pytest, err := exec.LookPath("pytest")
	if err != nil {
		testtool.Missing(t, "pytest", ".ci/install installs it with apt-get (python3-pytest)")
	}
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "test_m.py"), []byte("def test_tmp(tmp_path):\n    (tmp_path / 'x').write_text('x')\n    assert (tmp_path / 'x').read_text() == 'x'\n"), 0o644)
	out, errOut, code := run(t, Policy{Write: []string{proj}}, proj, pytest+" -q -p no:randomly", "HOME="+home)
	if code != 0 || !strings.Contains(out, "1 passed") {
		t.Errorf("pytest in the sandbox: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(proj, ".pytest_cache")); err != nil {
		t.Errorf("pytest could not write its cache in the project: %v", err)
	}
}

// A command that ends by a signal is reported with it; an exit status
// passes through; a missing program is the command's own error.
func TestStatusPassesThrough(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		script string
		code   int
		sig    string
	}{{"exit 7", 7, ""}, {"kill -TERM $$", -1, "SIGTERM"}, {"true", 0, ""}, {"/nonexistent/prog", 127, ""}} {
		cmd := exec.Command("/bin/sh", "-c", tc.script)
		cmd.Dir = dir
		s, err := Wrap(cmd, Policy{Write: []string{dir}})
		if err != nil {
			t.Fatal(err)
		}
		cmd.Run()
		code, sig, err := s.Finish(cmd.ProcessState)
		s.Close()
		if err != nil || code != tc.code || sig != tc.sig {
			t.Errorf("%s: got %d %q %v, want %d %q", tc.script, code, sig, err, tc.code, tc.sig)
		}
	}
}

// Bad policies are errors saying what is wrong.
func TestBadPolicy(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{Write: []string{"relative/dir"}}, `write: "relative/dir" is not an absolute path`},
		{Policy{Write: []string{"/nonexistent/runner-sandbox"}}, "write: lstat /nonexistent: no such file or directory"},
		{Policy{Read: []string{"nope"}}, `read: "nope" is not an absolute path`},
	} {
		_, err := Wrap(exec.Command("true"), tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.p, err, tc.want)
		}
	}
}

// systemTool finds name in the system's directories, not on the PATH: as
// root a sandboxed step runs as an unprivileged host id, which cannot
// reach tools in root's home (pyenv's shims, say).
func systemTool(t testing.TB, name string) string {
	t.Helper()
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o001 != 0 {
			return p
		}
	}
	testtool.Missing(t, name, "the system's "+name+" (in /usr/local/bin, /usr/bin or /bin)")
	return ""
}

// reachable opens the test's directories (and the test's temporary
// directory above them) to every user.
func reachable(dirs ...string) {
	for _, d := range dirs {
		os.Chmod(filepath.Dir(d), 0o755)
		os.Chmod(d, 0o777)
	}
}

// publicCopy copies the test binary where any user may run it.
func publicCopy(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		os.Chmod(d, 0o777)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sandbox.test")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// setuidID makes a setuid-root copy of id.
func setuidID(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/usr/bin/id")
	if err != nil {
		t.Skip("no /usr/bin/id")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		os.Chmod(d, 0o755)
	}
	p := filepath.Join(dir, "id")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	return p
}

// A kernel that cannot make the namespaces is an error naming what is
// missing, or with Optional an unconfined run that its report says was
// unconfined. The test runs itself in a user namespace whose own limit
// of nested user namespaces is 0 (user.max_user_namespaces is per
// namespace), which is what a kernel with them disabled looks like.
func TestKernelWithoutUserNamespaces(t *testing.T) {
	if os.Getenv("SANDBOX_NO_USERNS") == "1" {
		if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0); err != nil {
			t.Fatalf("limiting user namespaces: %v", err)
		}
		_, err := Wrap(exec.Command("true"), Policy{})
		if err == nil || !strings.Contains(err.Error(), "user namespaces are disabled (sysctl user.max_user_namespaces is 0)") {
			t.Errorf("strict: got %v, want an error naming user namespaces", err)
		}
		cmd := exec.Command("/bin/sh", "-c", "echo ran")
		s, err := Wrap(cmd, Policy{Optional: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		out, err := cmd.Output()
		rep := s.Report()
		if err != nil || string(out) != "ran\n" || rep.Active || rep.Mode != "optional" || !strings.Contains(rep.Missing, "user namespaces are disabled") {
			t.Errorf("optional: %q %v, report %+v", out, err, rep)
		}
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run", "^TestKernelWithoutUserNamespaces$", "-test.v")
	cmd.Env = append(os.Environ(), "SANDBOX_NO_USERNS=1")
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestKernelWithoutUserNamespaces") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// Narrowing reads needs Landlock: on a kernel without it that is an error
// saying so (or, optional, an unconfined run that says why). Without read
// narrowing, strict still refuses (Landlock is part of what it promises);
// optional runs confined by the namespaces alone, and writes outside are
// still refused.
func TestReadWithoutLandlock(t *testing.T) {
	old := kernelProbe
	k := old()
	k.landlock = 0
	kernelProbe = func() kernel { return k }
	defer func() { kernelProbe = old }()
	dir := t.TempDir()
	_, err := Wrap(exec.Command("true"), Policy{Read: []string{dir}})
	if err == nil || !strings.Contains(err.Error(), "needs Landlock, which this kernel lacks") {
		t.Errorf("strict: got %v", err)
	}
	s, err := Wrap(exec.Command("true"), Policy{Read: []string{dir}, Optional: true})
	if err != nil || s.Report().Active || !strings.Contains(s.Report().Missing, "Landlock") {
		t.Errorf("optional: %v %+v", err, s.Report())
	}
	outside := t.TempDir()
	out, _, code := run(t, Policy{Write: []string{dir}, Optional: true}, dir, `echo x > "$OUT/f" || echo refused; echo x > inside && echo wrote`, "OUT="+outside)
	if code != 0 || out != "refused\nwrote\n" {
		t.Errorf("without Landlock: %q (exit %d)", out, code)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Errorf("without Landlock a write outside went through")
	}
}

// TestConfinementRootMapped: as root, the step is root to itself (id -u
// says 0, its workdir's root-owned files are its own) while the host sees
// it as MappedRoot; what it writes and makes in its write paths lands on
// disk owned by root, as it would without the sandbox.
func TestConfinementRootMapped(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("an ordinary user's sandbox maps its uid to itself")
	}
	work := t.TempDir() // 0700, under a 0700 directory: root's alone
	os.WriteFile(filepath.Join(work, "mine"), []byte("old\n"), 0o600)
	cmd := exec.Command("/bin/sh", "-c", `id -u; id -g; stat -c '%u %g' mine; echo new >> mine && mkdir -p made/sub && echo x > made/sub/f && echo t > "$TMPDIR/t" && echo wrote; exec sleep 30`)
	cmd.Dir = work
	s, err := Wrap(cmd, Policy{Write: []string{work}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Start()
	s.Started()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var inside []string
	sc := bufio.NewScanner(out)
	for len(inside) < 5 && sc.Scan() {
		inside = append(inside, strings.Fields(sc.Text())...)
	}
	if want := []string{"0", "0", "0", "0", "wrote"}; strings.Join(inside, " ") != strings.Join(want, " ") {
		t.Errorf("inside: id -u, id -g, its workdir's file's owner, the writes: %q, want %q; stderr:\n%s", inside, want, stderr.String())
	}
	// The step's sleep, the helper's child, as the host sees it.
	helper := strconv.Itoa(cmd.Process.Pid)
	kids, err := os.ReadFile("/proc/" + helper + "/task/" + helper + "/children")
	if err != nil || len(strings.Fields(string(kids))) != 1 {
		t.Fatalf("the helper's children: %q %v", kids, err)
	}
	for _, pid := range []string{helper, strings.Fields(string(kids))[0]} {
		st, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			t.Fatal(err)
		}
		m := strconv.Itoa(MappedRoot)
		got := map[string]string{}
		for _, l := range strings.Split(string(st), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok {
				got[k] = strings.Join(strings.Fields(v), " ")
			}
		}
		for k, want := range map[string]string{"Uid": m + " " + m + " " + m + " " + m, "Gid": m + " " + m + " " + m + " " + m, "Groups": ""} {
			if got[k] != want {
				t.Errorf("the host sees process %s with %s %q, want %q", pid, k, got[k], want)
			}
		}
	}
	for _, f := range []string{"mine", "made", "made/sub", "made/sub/f"} {
		fi, err := os.Stat(filepath.Join(work, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s is owned by %d:%d on disk, want root's", f, st.Uid, st.Gid)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(work, "mine")); string(b) != "old\nnew\n" {
		t.Errorf("mine: %q", b)
	}
}

// TestStrictRefusesUnidmappableFS stands in a file system that cannot be
// idmapped (an old kernel, tmpfs before Linux 6.3, some overlayfs) under a
// write path: as root, strict refuses the step saying what and where;
// optional runs it confined with root mapped to root, and its report
// names what was missing.
func TestStrictRefusesUnidmappableFS(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root's sandbox idmaps its write paths")
	}
	work := t.TempDir()
	old := idmapTree
	defer func() { idmapTree = old }()
	idmapTree = func(path string, ns *os.File) (*os.File, error) {
		if path == work {
			return nil, &idmapError{path: path, op: "mount_setattr", err: syscall.EINVAL}
		}
		return old(path, ns)
	}
	_, err := Wrap(exec.Command("true"), Policy{Write: []string{work}})
	want := "sandbox: running as root, the step's root is mapped to uid 2147483646 and " + work + " (fs " + fsName(work) +
		") cannot be idmapped: mount_setattr: invalid argument, run runner as an ordinary user or use mode: optional"
	if err == nil || err.Error() != want || !errors.Is(err, ErrUnavailable) {
		t.Errorf("strict:\n got %v\nwant %s", err, want)
	}
	out, _, code := run(t, Policy{Write: []string{work}, Optional: true}, work, `id -u; echo x > f && echo wrote`)
	if code != 0 || out != "0\nwrote\n" {
		t.Errorf("optional: %q (exit %d)", out, code)
	}
	cmd := exec.Command("true")
	s, err := Wrap(cmd, Policy{Write: []string{work}, Optional: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rep := s.Report(); !rep.Active || !strings.Contains(rep.Missing, work+" (fs "+fsName(work)+") cannot be idmapped") {
		t.Errorf("optional: report %+v", rep)
	}
}

// The user namespace that idmapped mounts need is made by a process of
// its own once per runner process, not once per step.
func TestSandboxUsernsOncePerProcess(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root's sandbox idmaps its write paths")
	}
	var held []*os.File
	for range 3 {
		work := t.TempDir()
		run(t, Policy{Write: []string{work}}, work, "true")
		f, err := mappedUserns()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, f)
	}
	if held[0] != held[1] || held[1] != held[2] {
		t.Errorf("a user namespace per step: %v", held)
	}
}

// TestWritePathUnderAMountInAClosedDirectory: as root, a write path below
// a directory only root may search is reached through a read-only cover;
// a mount between that directory and the write path (a worker's own disk
// under a 0700 temporary directory) is hidden by the cover, and the
// sandbox still starts and the step still writes.
func TestWritePathUnderAMountInAClosedDirectory(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("covers are made only when root is mapped")
	}
	disk := filepath.Join(t.TempDir(), "disk") // under a 0700 directory
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", disk, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Skipf("no tmpfs to mount here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(disk, unix.MNT_DETACH) })
	work := filepath.Join(disk, "run", "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "echo made > f && cat f")
	cmd.Dir = work
	s, err := Wrap(cmd, Policy{Write: []string{work}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code, _, ferr := s.Finish(cmd.ProcessState)
	if ferr != nil || code != 0 || string(out) != "made\n" {
		t.Fatalf("step: out %q, code %d, %v / %v; stderr:\n%s", out, code, err, ferr, stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(work, "f")); err != nil || string(b) != "made\n" {
		t.Errorf("the file the step wrote: %q %v", b, err)
	}
}

// eventually reports whether cond holds within five seconds.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
