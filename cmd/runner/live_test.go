package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
)

// putMany runs writers processes at once that each put n keys
// (w<i>-k<j>), every tenth time the one shared key instead: with one
// `runner board put -` process per writer reading its puts as JSON lines
// (each put its own write), or with one process per put.
func putMany(t *testing.T, dir, bb string, writers, n int, perPut bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, writers*n)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lines []string
			for j := 0; j < n; j++ {
				key, value := fmt.Sprintf("w%d-k%d", w, j), fmt.Sprintf(`{"w":%d,"j":%d}`, w, j)
				if perPut {
					key = "p" + key
				}
				if j%10 == 0 {
					key, value = "shared", fmt.Sprint(w)
				}
				lines = append(lines, fmt.Sprintf(`{"key":%q,"value":%s}`, key, value))
				if perPut {
					cmd := exec.Command(binary, "board", bb, "put", key, value, "--agent", fmt.Sprintf("w%d", w))
					cmd.Dir = dir
					if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "wrote ") {
						errs <- fmt.Sprintf("put %s: %v %s", key, err, out)
					}
				}
			}
			if perPut {
				return
			}
			cmd := exec.Command(binary, "board", bb, "put", "-", "--agent", fmt.Sprintf("w%d", w))
			cmd.Dir = dir
			cmd.Stdin = strings.NewReader(strings.Join(lines, "\n"))
			out, err := cmd.CombinedOutput()
			if err != nil || strings.Count(string(out), "wrote ") != n {
				errs <- fmt.Sprintf("writer %d: %v %s", w, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// checkMany checks what putMany wrote: every key (prefix w, or pw for
// one process per put), at version 1, by its writer; seqs dense; the
// shared key written shared times, versions 1..N in seq order.
func checkMany(t *testing.T, b *board.Board, prefix string, writers, n, shared int) {
	t.Helper()
	missing := 0
	for w := 0; w < writers; w++ {
		for j := 0; j < n; j++ {
			if j%10 == 0 {
				continue
			}
			e, ok := b.Get(fmt.Sprintf("%s%d-k%d", prefix, w, j))
			if !ok {
				missing++
				continue
			}
			if e.Version != 1 || e.Author != fmt.Sprintf("w%d", w) || e.Meta["via"] == nil {
				t.Errorf("%s%d-k%d: %+v", prefix, w, j, e)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d keys lost", missing, writers*n*9/10)
	}
	hist := b.Query(board.Filter{Key: "shared"})
	if len(hist) != shared {
		t.Errorf("shared was written %d times, want %d", len(hist), shared)
	}
	for i, e := range hist {
		if e.Version != int64(i+1) {
			t.Fatalf("write %d of shared has version %d", i+1, e.Version)
		}
	}
	for i, e := range b.Entries() {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i+1, e.Seq)
		}
	}
}

func load(t *testing.T, bb string) *board.Board {
	t.Helper()
	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// 20 processes x 50 puts on a run that has ended: the CLI takes the
// run's lock for each write, none is lost.
func TestBoardManyWritersFinishedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("1000 processes")
	}
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	if r := runCLI(t, wd, "run", testdata("seed.yaml"), "-q", "--out", bb); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	putMany(t, wd, bb, 20, 50, false)
	checkMany(t, load(t, bb), "w", 20, 50, 100)
	// One process per put, as a shell loop would.
	putMany(t, wd, bb, 20, 10, true)
	checkMany(t, load(t, bb), "pw", 20, 10, 120)
}

// startLive starts testdata/live.yaml and waits until it serves its board.
func startLive(t *testing.T, wd, bb string) (cmd *exec.Cmd, out *bytes.Buffer, pid int) {
	t.Helper()
	cmd = exec.Command(binary, "run", testdata("live.yaml"), "-q", "--out", bb)
	cmd.Dir = wd
	out = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if o, err := boardlock.ReadOwner(bb); err == nil && o.Socket != "" {
			return cmd, out, o.PID
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never served its board: %s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The same on a live run: the writes go through the owner's socket, and a
// later step of the run reads them.
func TestBoardManyWritersLiveRun(t *testing.T) {
	if testing.Short() {
		t.Skip("1000 processes")
	}
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	cmd, out, pid := startLive(t, wd, bb)
	if pid != cmd.Process.Pid {
		t.Fatalf("owner pid %d, run pid %d", pid, cmd.Process.Pid)
	}
	// resume of a live run is refused, naming the owner.
	r := runCLI(t, wd, "resume", bb)
	if r.code != 2 || !strings.Contains(r.stderr, fmt.Sprintf("process %d owns it", pid)) {
		t.Errorf("resume of a live run: exit %d, stderr %q", r.code, r.stderr)
	}
	// so is a second run onto the same file.
	r = runCLI(t, wd, "run", testdata("live.yaml"), "-q", "--out", bb)
	if r.code != 2 || !strings.Contains(r.stderr, fmt.Sprintf("process %d owns it", pid)) {
		t.Errorf("run --out onto a live run: exit %d, stderr %q", r.code, r.stderr)
	}
	putMany(t, wd, bb, 20, 50, false)
	putMany(t, wd, bb, 10, 10, true) // and one process per put: w0..w9 again, shared 10 more times
	os.WriteFile(filepath.Join(wd, "done"), nil, 0o644)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v %s", err, out)
	}
	b := load(t, bb)
	checkMany(t, b, "w", 20, 50, 110)
	checkMany(t, b, "pw", 10, 10, 110)
	var count board.Entry
	for _, e := range b.Query(board.Filter{Label: "count"}) {
		count = e
	}
	last, _ := b.Get("shared")
	want := fmt.Sprintf("%d {\"j\":42,\"w\":7} %v", 20*50+10*10, last.Content)
	if count.Content != want {
		t.Errorf("the run's step saw %q, want %q", count.Content, want)
	}
	if _, err := os.Stat(bb + ".sock"); !os.IsNotExist(err) {
		t.Errorf("the socket outlived the run: %v", err)
	}
}

// watch streams a live run's changes as JSON lines, filtered by prefix or
// topic, and sees writes made after the run ended too.
func TestBoardWatch(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	cmd, out, _ := startLive(t, wd, bb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watch := func(args ...string) (*exec.Cmd, *bytes.Buffer) {
		w := exec.CommandContext(ctx, binary, append([]string{"board", bb, "watch"}, args...)...)
		var buf bytes.Buffer
		w.Stdout, w.Stderr = &buf, &buf
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return w, &buf
	}
	all, allOut := watch("--count", "4")
	tasks, tasksOut := watch("--topic", "task", "--count", "2")
	sig, sigOut := watch("--prefix", "signal:", "--count", "1")
	time.Sleep(500 * time.Millisecond) // let the watchers connect
	for _, args := range [][]string{
		{"put", "task:a", `{"status":"pending"}`, "--agent", "boss"},
		{"put", "note", "x", "--topic", "task"},
		{"put", "signal:me", "up", "--ttl", "60"},
		{"delete", "note"},
	} {
		if r := runCLI(t, wd, append([]string{"board", bb}, args...)...); r.code != 0 {
			t.Fatalf("%v: %d %s", args, r.code, r.stderr)
		}
	}
	for _, w := range []*exec.Cmd{all, tasks, sig} {
		if err := w.Wait(); err != nil {
			t.Fatalf("watch: %v\n%s%s%s", err, allOut, tasksOut, sigOut)
		}
	}
	wantLines := func(name string, got *bytes.Buffer, want ...string) {
		lines := strings.Split(strings.TrimSpace(got.String()), "\n")
		if len(lines) != len(want) {
			t.Fatalf("%s: %d lines, want %d:\n%s", name, len(lines), len(want), got)
		}
		for i, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("%s line %d = %s, want it to hold %s", name, i+1, lines[i], w)
			}
		}
	}
	wantLines("all", allOut, `"op":"put","key":"task:a","value":{"status":"pending"},"version":1,"author":"boss","topic":"task"`,
		`"key":"note","value":"x","version":1,"author":"cli","topic":"task"`, `"key":"signal:me"`, `"op":"delete","key":"note","value":null,"version":2`)
	// board.markdown: the seed's document, kept current during the run.
	md := filepath.Join(wd, "swarm-blackboard.md")
	waitFor(t, md, "| a | boss | pending |")

	wantLines("topic", tasksOut, `"key":"task:a"`, `"key":"note"`)
	wantLines("prefix", sigOut, `"key":"signal:me","value":"up","version":1,"author":"cli","topic":"signal","section":"kv"`)

	// After the run: a watch polls the file, and sees CLI writes.
	os.WriteFile(filepath.Join(wd, "done"), nil, 0o644)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v %s", err, out)
	}
	waitFor(t, md, "| count | 1 | succeeded |")
	after, afterOut := watch("--prefix", "late", "--count", "1")
	time.Sleep(300 * time.Millisecond)
	runCLI(t, wd, "board", bb, "put", "late", "1")
	if err := after.Wait(); err != nil {
		t.Fatal(err)
	}
	wantLines("after the run", afterOut, `"key":"late"`)
}

// Two board steps in a parallel group write one key differently, by two
// authors: one conflict, and the plan branches to its resolver.
func TestConflictBranchesToResolver(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	r := runCLI(t, wd, "run", testdata("conflict.yaml"), "-q", "--out", bb)
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	b, err := board.Load(bb)
	if err != nil {
		t.Fatal(err)
	}
	cs := b.Conflicts("answer")
	if len(cs) != 1 {
		t.Fatalf("%d conflicts, want 1: %+v", len(cs), cs)
	}
	c := cs[0].Content.(map[string]any)
	w, o := c["written"].(map[string]any), c["overwritten"].(map[string]any)
	if w["version"] != 2.0 || o["version"] != 1.0 || w["author"] == o["author"] || w["value"] == o["value"] {
		t.Fatalf("conflict %v", c)
	}
	var labels []string
	for _, s := range b.Steps() {
		labels = append(labels, s.Label)
	}
	if got := strings.Join(labels, " "); !strings.HasSuffix(got, "propose check resolve decide") {
		t.Fatalf("steps %s", got)
	}
	final, _ := b.Get("answer")
	if want := fmt.Sprintf("%v or %v", w["value"], o["value"]); final.Content != want || final.Author != "resolver" {
		t.Fatalf("answer = %+v, want %q by resolver", final, want)
	}
}

// waitFor waits until the file at path holds want.
func waitFor(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q:\n%s", path, want, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// resume waits for a `runner board` write that holds the run's lock for a
// moment (without waiting, it would refuse the run as in use).
func TestResumeWaitsForBoardWriter(t *testing.T) {
	wd := t.TempDir()
	bb := filepath.Join(wd, "bb.json")
	if r := runCLI(t, wd, "run", testdata("seed.yaml"), "-q", "--out", bb); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	lock, err := boardlock.TryLock(bb, boardlock.Owner{Kind: boardlock.OwnerCLI})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		lock.Unlock()
	}()
	r := runCLI(t, wd, "resume", bb)
	if r.code != 0 || !strings.Contains(r.stderr, "already succeeded") {
		t.Fatalf("resume after a short hold: exit %d, stderr %q", r.code, r.stderr)
	}
}
