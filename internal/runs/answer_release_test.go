package runs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
)

const askPlan = `version: 1
steps:
  - label: review
    type: input
    prompt: Ship it?
    form:
      type: object
      properties:
        ok: {type: boolean}
      required: [ok]
  - {label: after, type: board, op: write, key: said, value: '${{ steps.review.output.ok }}'}
`

// waitingRun saves a run that waits at input review and returns its file.
func waitingRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	plan := filepath.Join(dir, "ask.yaml")
	if err := os.WriteFile(plan, []byte(askPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	bb := filepath.Join(dir, "bb.json")
	res, err := runs.Start(context.Background(), runs.Options{Plan: plan, Workdir: dir, Board: bb}, runs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Board.Run().Status; st != board.StatusWaiting {
		t.Fatalf("the run is %s, want waiting", st)
	}
	return bb
}

// A person who answers while the run is on its way out (it has stopped
// serving its board but still holds its file as it saves it) has the
// answer recorded once the run lets go, not refused; a run that keeps its
// file longer than the wait still gets the answer refused, saying why.
func TestAnswerWhileTheRunLetsGo(t *testing.T) {
	for _, c := range []struct {
		name   string
		socket func(t *testing.T, bb string) string // the owner's socket ("": none)
		hold   time.Duration                        // how long the owner keeps the file
		served bool                                 // the owner serves the board until the answer is opened
	}{
		{name: "no socket any more", socket: func(*testing.T, string) string { return "" }, hold: 300 * time.Millisecond},
		{name: "a socket that is gone", socket: func(t *testing.T, _ string) string { return filepath.Join(t.TempDir(), "gone.sock") }, hold: 300 * time.Millisecond},
		{name: "stops serving after the question is opened", served: true, hold: 300 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			bb := waitingRun(t)
			lock, err := boardlock.TryLock(bb, boardlock.Owner{Kind: boardlock.OwnerRun})
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Unlock()
			var srv *liveboard.Server
			if c.served {
				b, err := board.Open(bb, board.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				if srv, err = liveboard.Serve(b); err != nil {
					t.Fatal(err)
				}
				srv.OnAnswer(func(board.Answer) (liveboard.AnswerReply, error) {
					t.Error("the answer reached a run that had stopped serving")
					return liveboard.AnswerReply{}, errors.New("stopped")
				})
				lock.SetOwner(boardlock.Owner{Kind: boardlock.OwnerRun, Socket: srv.Socket})
			} else {
				lock.SetOwner(boardlock.Owner{Kind: boardlock.OwnerRun, Socket: c.socket(t, bb)})
			}
			// The run lets go of its lock in a goroutine of its own, which
			// ends before the deferred Unlock above (a Lock is one
			// process's, not shared between goroutines).
			var letting sync.WaitGroup
			defer letting.Wait()
			letGo := func() {
				time.Sleep(c.hold)
				lock.Unlock()
			}
			if !c.served {
				letting.Go(letGo)
			}
			q, err := runs.OpenQuestion(bb, "review", 0, nil, nil)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer q.Close()
			if c.served {
				// The run ends between the question and its answer.
				lock.SetOwner(boardlock.Owner{Kind: boardlock.OwnerRun})
				srv.Close()
				letting.Go(letGo)
			}
			got, err := q.Answer(map[string]any{"ok": true}, "ana")
			if err != nil {
				t.Fatalf("answer: %v", err)
			}
			if got.Where != runs.OnFile || got.Already {
				t.Errorf("answered %+v, want recorded on the file", got)
			}
			q.Close()
			b, err := board.Load(bb)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range b.Recordings() {
				if r.Kind == "input" && r.Label == "review" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d answers recorded on the file, want 1", n)
			}
		})
	}
}

// A file held past the wait: the answer is refused, and says to try again.
func TestAnswerRefusedWhileTheFileStaysHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the bound")
	}
	bb := waitingRun(t)
	lock, err := boardlock.TryLock(bb, boardlock.Owner{Kind: boardlock.OwnerRun})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	start := time.Now()
	_, err = runs.OpenQuestion(bb, "review", 0, nil, nil)
	var ue *runs.UsageError
	if err == nil || !errors.As(err, &ue) {
		t.Fatalf("open: %v, want a usage error", err)
	}
	if waited := time.Since(start); waited < 5*time.Second {
		t.Errorf("refused after %s; want the answer to wait for the run to let go first", waited)
	}
}

// The same with the run's owner another process, as it is: it holds the
// file (its socket already gone) and exits, and the kernel lets go of its
// lock. The answer given meanwhile lands on the file.
func TestAnswerWhileAnotherProcessLetsGo(t *testing.T) {
	bb := waitingRun(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldRunLockHelper$")
	cmd.Env = append(os.Environ(), "RUNS_TEST_HOLD="+bb)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		cmd.Process.Kill()
		t.Fatalf("the helper did not take the lock: %q %v", line, err)
	}
	q, err := runs.OpenQuestion(bb, "review", 0, nil, nil)
	if err != nil {
		t.Fatalf("open while another process ends: %v", err)
	}
	defer q.Close()
	if got, err := q.Answer(map[string]any{"ok": true}, "ana"); err != nil || got.Where != runs.OnFile {
		t.Fatalf("answer: %+v %v", got, err)
	}
}

// TestHoldRunLockHelper is the process of TestAnswerWhileAnotherProcessLetsGo
// that holds a run's file as a run on its way out does, then exits.
func TestHoldRunLockHelper(t *testing.T) {
	path := os.Getenv("RUNS_TEST_HOLD")
	if path == "" {
		t.Skip("a helper process of TestAnswerWhileAnotherProcessLetsGo")
	}
	if _, err := boardlock.TryLock(path, boardlock.Owner{Kind: boardlock.OwnerRun, Socket: filepath.Join(t.TempDir(), "gone.sock")}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("held")
	time.Sleep(400 * time.Millisecond)
	os.Exit(0) // the lock goes with the process
}
