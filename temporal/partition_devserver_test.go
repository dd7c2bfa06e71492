package temporal

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxy forwards TCP connections to target until cut: then it forwards
// nothing more, in either direction, and holds the connections open
// without a word (a network partition, not a refused connection: the
// worker's calls hang until their deadlines).
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn // upstream connections, closed by cut
	held   []net.Conn // the worker's side, kept open and silent
}

func startProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range append(p.conns, p.held...) {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.held = append(p.held, c)
			if p.cut {
				p.mu.Unlock()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				continue
			}
			p.conns = append(p.conns, u)
			p.mu.Unlock()
			go p.pipe(u, c)
			go p.pipe(c, u)
		}
	}()
	return p
}

// pipe copies src to dst until either fails or the proxy is cut.
func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			return // the bytes are lost, as in a partition
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed side: the proxy's close ends the other direction
		}
	}
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// partition stops all forwarding: the server side is closed, the
// worker's side left open and silent.
func (p *proxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A worker is cut off from the server (a partition: its connections go
// silent) while its step runs. Its heartbeats no longer arrive, the step
// is retried on another host, where the run is pinned again with its
// workspace; the cut-off worker's step process is ended when that worker
// notices the lost heartbeat, before the retry starts, so two never run
// at once; the step's record counts both attempts.
func TestDevServerPartitionedWorker(t *testing.T) {
	c := newCluster(t)
	px := startProxy(t, c.srv.hostPort)
	marks := t.TempDir() // outside every workspace: where the test sees the step run
	w1 := startProc(t, c.work, c.rt, "worker", "--temporal", px.addr(), "--task-queue", c.queue, "--blobs", c.blobs,
		"--log-format", "json", "--host-id", "h1", "--work-root", t.TempDir())
	waitOutput(t, w1, "worker started", time.Minute)
	checkout := t.TempDir()
	plan := writePlan(t, checkout, fmt.Sprintf(`
version: 1
steps:
  - {label: first, type: command, run: "echo from-first > a.txt"}
  - label: long
    type: command
    run: 'echo $$ >> %[1]s/started; i=0; while [ $i -lt 200 ]; do echo $$ >> %[1]s/ticks; echo $$ >> ticks.txt; sleep 0.1; i=$((i+1)); done; cat a.txt'
`, marks))
	out := filepath.Join(checkout, "bb.json")
	run := startProc(t, checkout, c.rt, "run", plan, "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
		"--out", out, "--heartbeat-timeout", "3s", "--host-timeout", "4s")
	old := strings.TrimSpace(waitFile(t, filepath.Join(marks, "started"), 2*time.Minute))
	ticks := filepath.Join(marks, "ticks")
	for deadline := time.Now().Add(time.Minute); countOf(ticks, old) < 20; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the step did not tick")
		}
	}
	px.partition()
	w2 := startProc(t, c.work, c.rt, "worker", "--temporal", c.srv.hostPort, "--task-queue", c.queue, "--blobs", c.blobs,
		"--log-format", "json", "--host-id", "h2", "--work-root", t.TempDir())
	if code := run.wait(t, 4*time.Minute); code != 0 {
		t.Fatalf("run: exit %d\n%s\nh1:\n%s\nh2:\n%s", code, run.out, w1.out, w2.out)
	}

	lines := strings.Fields(string(must(os.ReadFile(ticks))))
	starts := strings.Fields(string(must(os.ReadFile(filepath.Join(marks, "started")))))
	if len(starts) != 2 {
		t.Fatalf("the step started %d times (%v); want twice, once per host", len(starts), starts)
	}
	retry := starts[1]
	if n := countOf(ticks, old); n >= 200 {
		t.Errorf("the cut-off worker's step ran to its end (%d ticks)", n)
	}
	// Never both at once: every tick of the cut-off step comes before the
	// retry's first.
	seenRetry := false
	for i, l := range lines {
		switch l {
		case retry:
			seenRetry = true
		case old:
			if seenRetry {
				t.Fatalf("tick %d is the cut-off step's, after the retry began: both ran at once\n%v", i, lines)
			}
		}
	}
	if n := countOf(ticks, retry); n != 200 {
		t.Errorf("the retry ticked %d times, want 200", n)
	}
	b := loadBoard(t, out)
	rec := lastRecord(b, "long")
	if rec.Status != "succeeded" || rec.Attempts != 2 {
		t.Errorf("long: status %s, attempts %d; want succeeded in 2 attempts", rec.Status, rec.Attempts)
	}
	if s := stepOf(t, b, "long"); !strings.Contains(string(s.Result), "from-first") {
		t.Errorf("long on the new host: %s; want the file the first step wrote on the cut-off one", s.Result)
	}
	if !strings.Contains(run.out.String(), "ran on host h2 (host h1 stopped taking the run's tasks)") {
		t.Errorf("the run does not say it moved to h2:\n%s", run.out)
	}
}
