package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// Processes that contend for one lease, each holding it while a command
// runs: the commands' turns never overlap, and every process gets its
// turn (they wait for each other).
func TestBoardLeaseProcessesTakeTurns(t *testing.T) {
	wd := t.TempDir()
	if r := runCLI(t, wd, "board", "bb.json", "put", "ready", "1"); r.code != 0 {
		t.Fatalf("put: %d %s", r.code, r.stderr)
	}
	log := filepath.Join(wd, "turns.log")
	const n = 3
	var cmds []*exec.Cmd
	var errs []*bytes.Buffer
	for i := range n {
		owner := "p" + string(rune('a'+i))
		turn := "echo start " + owner + " >> " + log + "; sleep 0.2; echo end " + owner + " >> " + log
		cmd := exec.Command(binary, "board", "bb.json", "lock", "lock:res", "--ttl", "2s", "--owner", owner, "--wait", "60s", "--", "sh", "-c", turn)
		cmd.Dir = wd
		var eb bytes.Buffer
		cmd.Stderr = &eb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, errs = append(cmds, cmd), append(errs, &eb)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, errs[i])
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2*n {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 2*n, data)
	}
	seen := map[string]bool{}
	for i := 0; i < len(lines); i += 2 {
		start, end := strings.TrimPrefix(lines[i], "start "), strings.TrimPrefix(lines[i+1], "end ")
		if start == lines[i] || end != start {
			t.Fatalf("turns overlap:\n%s", data)
		}
		seen[start] = true
	}
	if len(seen) != n {
		t.Errorf("not every process had a turn:\n%s", data)
	}
	// Each turn released its lease: the key is free now.
	if r := runCLI(t, wd, "board", "bb.json", "get", "lock:res"); strings.TrimSpace(r.stdout) != "null" {
		t.Errorf("lease left after the turns: %q", r.stdout)
	}
}

// A holder killed with SIGKILL stops renewing; its lease expires and a
// waiting process takes it then, not before.
func TestBoardLeaseHolderKilled(t *testing.T) {
	wd := t.TempDir()
	ready := filepath.Join(wd, "ready")
	holder := exec.Command(binary, "board", "bb.json", "lock", "lock:res", "--ttl", "1s", "--owner", "a", "--", "sh", "-c", "touch "+ready+"; exec sleep 60")
	holder.Dir = wd
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the kill takes its command too
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder never started its command")
		}
	}
	// Past the first TTL: the holder renews, so the lease is still its.
	time.Sleep(1500 * time.Millisecond)
	if r := runCLI(t, wd, "board", "bb.json", "lock", "lock:res", "--ttl", "1s", "--owner", "b"); r.code != 1 || !strings.Contains(r.stderr, "held by a") {
		t.Fatalf("b took a renewed lease: %d %s", r.code, r.stderr)
	}
	if err := syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	r := runCLI(t, wd, "board", "bb.json", "lock", "lock:res", "--ttl", "1s", "--owner", "b", "--wait", "30s")
	if r.code != 0 {
		t.Fatalf("b after the holder died: %d %s", r.code, r.stderr)
	}
	b, err := board.Load(filepath.Join(wd, "bb.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lastA, firstB *board.Entry
	for _, e := range b.Query(board.Filter{Key: "lock:res"}) {
		owner, _ := board.LeaseOwner(e)
		switch {
		case owner == "a":
			lastA = &e
		case owner == "b" && firstB == nil:
			firstB = &e
		}
	}
	if lastA == nil || firstB == nil {
		t.Fatalf("leases on the board: a %v, b %v", lastA, firstB)
	}
	if expiry := lastA.TS.Add(time.Second); firstB.TS.Before(expiry) {
		t.Errorf("b took the lease at %s, before a's expired at %s", firstB.TS, expiry)
	}
}
