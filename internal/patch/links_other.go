//go:build !unix

package patch

import (
	"io/fs"
	"os"
)

// links is how many names the file has; 0 when unknown.
func links(fi fs.FileInfo) int { return 0 }

// link makes newp a second name of oldp.
func (t *tree) link(oldp, newp string) error { return t.root.Link(oldp, newp) }

// dirBudget is how many directories a tree may keep open.
func dirBudget() int { return 256 }

// readFast and writeFast have no faster way here than os.Root.
func (t *tree) readFast(p string, size int64) ([]byte, bool, error) { return nil, false, nil }

func (t *tree) writeFast(p string, data []byte, mode fs.FileMode, sync bool) (bool, error) {
	return false, nil
}

// lockStaging has no lock to take here: stale staging directories are
// not found, and stay under .runner/staging.
func lockStaging(root *os.Root, dir string) (*os.File, error) { return nil, nil }

func staleStaging(root *os.Root, p, name string) bool { return false }

func (t *tree) renameAcross(old, p string) error { return t.root.Rename(old, p) }

func isCrossDevice(err error) bool { return false }

func processUmask() int { return -1 }
