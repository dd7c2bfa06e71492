package boardview

import (
	"bytes"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// KeepMarkdown keeps the file at path current with b's markdown document
// (Markdown) until stop is called: rewritten atomically after each
// change, at most once per every, and a last time at stop.
func KeepMarkdown(b *board.Board, path string, every time.Duration) (stop func() error) {
	quit := make(chan struct{})
	done := make(chan error, 1)
	write := func() error {
		var buf bytes.Buffer
		if err := Markdown(&buf, b); err != nil {
			return err
		}
		return board.WriteFileAtomic(path, buf.Bytes(), board.FileMode)
	}
	go func() {
		var err error
		for {
			changed := b.Changed()
			if werr := write(); werr != nil && err == nil {
				err = werr
			}
			select {
			case <-quit:
				done <- err
				return
			case <-changed:
			}
			select {
			case <-quit:
			case <-time.After(every):
			}
		}
	}()
	return func() error {
		close(quit)
		err := <-done
		if werr := write(); err == nil {
			err = werr
		}
		return err
	}
}
