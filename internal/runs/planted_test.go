package runs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/view/boardview"
)

// plants are what a step can leave in the run's directory where runner
// is about to make one of its files, and the words runner's error uses
// for each.
var plants = []struct {
	name, says string
	plant      func(t *testing.T, path, outside string)
}{
	{"symlink to a file outside", "symbolic link", func(t *testing.T, path, outside string) {
		must(t, os.Symlink(outside, path))
	}},
	{"hard link to a file outside", "hard link", func(t *testing.T, path, outside string) {
		must(t, os.Link(outside, path))
	}},
	{"directory", "directory", func(t *testing.T, path, _ string) {
		must(t, os.Mkdir(path, 0o700))
	}},
	{"FIFO", "named pipe", func(t *testing.T, path, _ string) {
		must(t, syscall.Mkfifo(path, 0o600))
	}},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunnerFilesNotFollowed: for each file runner makes in a run's
// directory, something planted at its path (a link to a file outside, a
// hard link, a directory, a FIFO) is never followed or written through:
// the file outside keeps its content and mode, runner does not hang, and
// an error names the file and what was found there. A file replaced by
// a rename (blackboard.json, the running, remote and markdown files)
// takes the place of a link or a FIFO; one opened in place (the journal,
// the lock) is refused.
func TestRunnerFilesNotFollowed(t *testing.T) {
	files := []struct {
		name     string
		file     string // beside blackboard.json
		replaced bool   // made anew by a rename: what was there is replaced
		quiet    bool   // best effort: no error to read
		// prepare readies the run's directory before the plant (a board
		// made, say) and returns the operation that meets it.
		prepare func(t *testing.T, bb string) func() error
	}{
		{name: "journal", file: "blackboard.json.journal", prepare: func(t *testing.T, bb string) func() error {
			b := created(t, bb)
			return func() error {
				_, err := b.Write(board.WriteOp{Key: "k", Value: "written by runner"})
				return err
			}
		}},
		{name: "lock", file: "blackboard.json.lock", prepare: func(t *testing.T, bb string) func() error {
			return func() error {
				l, err := boardlock.TryLock(bb, boardlock.Owner{Kind: boardlock.OwnerRun})
				if err == nil {
					l.Unlock()
				}
				return err
			}
		}},
		{name: "blackboard.json", file: "blackboard.json", replaced: true, prepare: func(t *testing.T, bb string) func() error {
			return func() error {
				_, err := board.Create(bb, board.Run{ID: "r"}, board.Options{})
				return err
			}
		}},
		{name: "running", file: "blackboard.json.running", replaced: true, quiet: true, prepare: func(t *testing.T, bb string) func() error {
			return func() error {
				r := trackRunning(bb, nil, nil)
				r.StepStarted("s", 1, "")
				return nil
			}
		}},
		{name: "remote", file: "blackboard.json.remote", replaced: true, prepare: func(t *testing.T, bb string) func() error {
			return func() error {
				return liveboard.WriteRemote(liveboard.Remote{Board: bb, Engine: "temporal", WorkflowID: "w", RunID: "r"})
			}
		}},
		{name: "markdown board", file: "board.md", replaced: true, prepare: func(t *testing.T, bb string) func() error {
			return func() error {
				stop := boardview.KeepMarkdown(board.New(board.Run{ID: "r"}), filepath.Join(filepath.Dir(bb), "board.md"), time.Hour)
				return stop()
			}
		}},
		{name: "live board's socket", file: "blackboard.json.sock", prepare: func(t *testing.T, bb string) func() error {
			b := created(t, bb)
			return func() error {
				srv, err := liveboard.Serve(b)
				if err == nil {
					srv.Close()
				}
				return err
			}
		}},
	}
	for _, f := range files {
		for _, p := range plants {
			t.Run(f.name+"/"+p.name, func(t *testing.T) {
				dir := t.TempDir()
				os.Chmod(dir, 0o700) // a run's own directory is private
				bb := filepath.Join(dir, "blackboard.json")
				outside := filepath.Join(t.TempDir(), "outside")
				must(t, os.WriteFile(outside, []byte("outside\n"), 0o644))
				path := filepath.Join(dir, f.file)
				os.Remove(path)
				op := f.prepare(t, bb)
				p.plant(t, path, outside)
				t.Cleanup(func() {
					// Unblock an open runner would be stuck in.
					if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
						if r, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
							r.Close()
						}
					}
				})
				done := make(chan error, 1)
				go func() { done <- op() }()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: runner hung on the %s planted there", f.file, p.name)
				}
				if data, _ := os.ReadFile(outside); string(data) != "outside\n" {
					t.Errorf("the file outside was written through %s: %q", f.file, data)
				}
				if fi, _ := os.Stat(outside); fi == nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("the file outside changed mode or went: %v", fi)
				}
				wantErr := !f.replaced || p.says == "directory"
				switch {
				case f.quiet:
				case wantErr && err == nil:
					t.Errorf("%s: no error with a %s planted there", f.file, p.name)
				case !wantErr && err != nil:
					t.Errorf("%s: %v (want the %s replaced)", f.file, err, p.name)
				case err != nil && (!strings.Contains(err.Error(), path) || !strings.Contains(strings.ReplaceAll(err.Error(), dir, ""), p.says)):
					t.Errorf("error %q: want it to name %s and say %q", err, path, p.says)
				}
				if f.replaced && p.says != "directory" {
					if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
						t.Errorf("%s is not runner's regular file now: %v %v", f.file, fi, err)
					}
				}
			})
		}
	}
}

// created is a new saved board at bb (the journal not yet opened).
func created(t *testing.T, bb string) *board.Board {
	t.Helper()
	b, err := board.Create(bb, board.Run{ID: "r"}, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
