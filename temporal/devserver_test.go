package temporal

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/testutil/testtool"
	"go.temporal.io/sdk/client"
)

// temporalCLI is the Temporal CLI that serves the dev server:
// $RUNNER_TEMPORAL_BIN (.ci/run sets it to what .ci/install built), else
// `temporal` on PATH. Without one the dev-server tests skip, and fail
// under CI=true.
func temporalCLI(t testing.TB) string {
	t.Helper()
	const how = "`go install github.com/temporalio/cli/cmd/temporal@v1.5.1` builds it; .ci/install does, and .ci/run sets RUNNER_TEMPORAL_BIN to it"
	if os.Getenv("RUNNER_TEMPORAL_BIN") != "" {
		return testtool.FromEnv(t, "RUNNER_TEMPORAL_BIN", "the Temporal CLI", how)
	}
	return testtool.LookPath(t, "temporal", "the Temporal CLI, which serves the dev server; "+how+", or set RUNNER_TEMPORAL_BIN")
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// devServer is `temporal server start-dev` on loopback with its database
// in a file, so it can be stopped and started again.
type devServer struct {
	t        testing.TB
	bin, db  string
	port     int
	metrics  int // the Prometheus /metrics port
	hostPort string
	cmd      *exec.Cmd
	log      *bytes.Buffer
	extra    []string      // more `start-dev` flags
	exited   chan struct{} // closed when cmd has been waited for
	started  bool          // it came up once: clients know its port
	logMu    sync.Mutex
}

func startDevServer(t testing.TB, extra ...string) *devServer {
	s := &devServer{t: t, bin: temporalCLI(t), db: filepath.Join(t.TempDir(), "temporal.db"), port: freePort(t), extra: extra}
	s.hostPort = fmt.Sprintf("127.0.0.1:%d", s.port)
	s.metrics = freePort(t)
	s.start()
	t.Cleanup(s.stop)
	return s
}

// start starts the server and waits until it answers. A port picked by
// freePort can be taken by someone else before the server binds it (the
// tests run in parallel, and the kernel hands out ephemeral ports too), so
// a start that dies with "address already in use" is tried again on fresh
// ports; only the frontend port stays once clients know it.
func (s *devServer) start() {
	for attempt := 1; ; attempt++ {
		err := s.startOnce()
		if err == nil {
			return
		}
		if !strings.Contains(s.log.String(), "address already in use") || attempt == 5 {
			s.t.Fatalf("the dev server did not come up on %s: %v\n%s", s.hostPort, err, s.log)
		}
		if !s.started {
			s.port = freePort(s.t)
			s.hostPort = fmt.Sprintf("127.0.0.1:%d", s.port)
		} else {
			time.Sleep(time.Second) // our own port: wait for whoever holds it
		}
		s.metrics = freePort(s.t)
	}
}

func (s *devServer) startOnce() error {
	s.log = &bytes.Buffer{}
	s.cmd = exec.Command(s.bin, "server", "start-dev", "--headless", "--db-filename", s.db, "--ip", "127.0.0.1",
		"--port", strconv.Itoa(s.port), "--http-port", strconv.Itoa(freePort(s.t)), "--metrics-port", strconv.Itoa(s.metrics),
		"--log-level", "error")
	s.cmd.Args = append(s.cmd.Args, s.extra...)
	s.cmd.Stdout, s.cmd.Stderr = &lockedWriter{w: s.log, mu: &s.logMu}, &lockedWriter{w: s.log, mu: &s.logMu}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	s.exited = exited
	go func(cmd *exec.Cmd) { cmd.Wait(); close(exited) }(s.cmd)
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := client.Dial(client.Options{HostPort: s.hostPort, Logger: quietLogger()})
		if err == nil {
			_, err = c.CheckHealth(context.Background(), &client.CheckHealthRequest{})
			c.Close()
			if err == nil {
				s.started = true
				return nil
			}
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("it exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *devServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// lockedWriter lets the server's stdout and stderr share one buffer that
// the test reads while the server runs.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// binaries builds runner-temporal and the default runner once per test run.
var binaries struct {
	once             sync.Once
	dir, err, runner string
	temporal         string
}

func buildBinaries(t testing.TB) (runner, runnerTemporal string) {
	binaries.once.Do(func() {
		dir, err := os.MkdirTemp("", "runner-temporal-bin-")
		if err != nil {
			binaries.err = err.Error()
			return
		}
		binaries.dir = dir
		binaries.runner = filepath.Join(dir, "runner")
		binaries.temporal = filepath.Join(dir, "runner-temporal")
		for _, b := range []struct{ dir, out, pkg string }{{"..", binaries.runner, "./cmd/runner"}, {".", binaries.temporal, "./cmd/runner-temporal"}} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				binaries.err = fmt.Sprintf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if binaries.err != "" {
		t.Fatal(binaries.err)
	}
	return binaries.runner, binaries.temporal
}

// proc is a process the test started; it is killed when the test ends.
type proc struct {
	cmd *exec.Cmd
	out *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startProc(t testing.TB, dir, bin string, args ...string) *proc {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	p := &proc{cmd: cmd, out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
			}
		}
	})
	return p
}

// wait waits for the process and returns its exit code.
func (p *proc) wait(t testing.TB, limit time.Duration) int {
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		p.cmd.Process.Kill()
		t.Fatalf("%s did not end within %s; output:\n%s", p.cmd.Path, limit, p.out)
	}
	return -1
}
