//go:build linux

package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/planrunner/runner/internal/runs"
)

// syncBuffer is a log that goroutines write to at once.
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

// serveTCP serves s as `runner serve` does, on a loopback port.
func serveTCP(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	done := make(chan struct{})
	go func() { hs.Serve(ln); close(done) }()
	t.Cleanup(func() { hs.Close(); <-done })
	return ln.Addr().String()
}

// settledGoroutines waits until at most want goroutines run, and says
// how many there are.
func settledGoroutines(want int, within time.Duration) int {
	end := time.Now().Add(within)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(end) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client that opens an event stream and then reads nothing (its
// receive buffer small, while its run changes hundreds of times a
// second) is dropped once a write waits past the stream's bound: the log
// names it and why, and the stream's goroutines and its run's watcher
// end. Its page's script would open the stream again.
func TestServeDropsAStreamItsClientDoesNotRead(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		change     func(runDir string, i int)
	}{
		{"run events", "/runs/ID/events", func(runDir string, i int) {
			os.WriteFile(filepath.Join(runDir, "noise"), []byte(fmt.Sprint(i)), 0o600)
		}},
		{"run list events", "/events", func(runDir string, i int) {
			os.WriteFile(filepath.Join(runDir, "noise"), []byte(fmt.Sprint(i)), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			id := waitingRun(t, dir)
			runDir := filepath.Join(runs.RunsDir(dir), id)
			var log syncBuffer
			const bound = 300 * time.Millisecond
			s, err := New(Options{Dir: dir, Throttle: time.Microsecond, StreamWriteTimeout: bound, Log: zerolog.New(&log)})
			if err != nil {
				t.Fatal(err)
			}
			addr := serveTCP(t, s)
			time.Sleep(50 * time.Millisecond)
			base := runtime.NumGoroutine()

			d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
				return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
			}}
			conn, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			path := strings.ReplaceAll(tc.path, "ID", id)
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", path, addr, s.Token())
			start := time.Now()

			ctx, stop := context.WithCancel(context.Background())
			changing := make(chan struct{})
			go func() {
				defer close(changing)
				for i := 0; ctx.Err() == nil; i++ {
					tc.change(runDir, i)
					time.Sleep(200 * time.Microsecond)
				}
			}()
			client := conn.LocalAddr().String()
			for !strings.Contains(log.String(), "dropped an event stream") && time.Since(start) < 20*time.Second {
				time.Sleep(10 * time.Millisecond)
			}
			took := time.Since(start)
			stop()
			<-changing
			text := log.String()
			if !strings.Contains(text, "dropped an event stream") {
				t.Fatalf("a client that reads nothing was not dropped in %s; the log:\n%s", took, text)
			}
			for _, want := range []string{client, "--stream-write-timeout", bound.String()} {
				if !strings.Contains(text, want) {
					t.Errorf("the log of the drop does not say %q:\n%s", want, text)
				}
			}
			if took < bound {
				t.Errorf("dropped after %s, before the bound %s", took, bound)
			}
			if n := settledGoroutines(base, 5*time.Second); n > base {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines after the drop, %d before the client came:\n%s", n, base, buf[:runtime.Stack(buf, true)])
			}
			t.Logf("dropped after %s", took)
		})
	}
}

// A request whose headers or body stop coming holds its connection no
// longer than the read bound: the server closes it.
func TestServeBoundsReadingARequest(t *testing.T) {
	dir := t.TempDir()
	const bound = 300 * time.Millisecond
	s, err := New(Options{Dir: dir, ReadTimeout: bound})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveTCP(t, s)
	for _, tc := range []struct{ name, sent string }{
		{"headers that never end", "GET / HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + s.Token() + "\r\n"},
		{"a body that never comes", "POST /runs/x/answer HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + s.Token() +
			"\r\nOrigin: http://" + addr + "\r\nX-Runner-CSRF: " + s.csrf + "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nlabel="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, tc.sent)
			start := time.Now()
			conn.SetReadDeadline(start.Add(bound + 5*time.Second))
			_, err = io.ReadAll(conn)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("the server still held the connection after %s (%v), want it closed after %s", took, err, bound)
			}
			if took < bound/2 || took > bound+2*time.Second {
				t.Errorf("the connection was closed after %s, want about %s", took, bound)
			}
		})
	}
}
