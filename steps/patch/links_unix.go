//go:build unix

package patch

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// dirBudget is how many directories a tree may keep open (two
// descriptors each): a quarter of the descriptor limit, at most 4096.
func dirBudget() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur < 64 {
		return 16
	}
	return int(min(r.Cur/8, 4096))
}

// links is how many names the file has; 0 when unknown.
func links(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Nlink)
	}
	return 0
}

// link makes newp a second name of oldp: one linkat between the two
// directories, which os.Root.Link would reach by walking both paths.
func (t *tree) link(oldp, newp string) error {
	od, ob := split(oldp)
	nd, nb := split(newp)
	of, err := t.dirFile(od)
	if err != nil || of == nil {
		return t.root.Link(oldp, newp)
	}
	nf, err := t.dirFile(nd)
	if err != nil || nf == nil {
		return t.root.Link(oldp, newp)
	}
	return unix.Linkat(int(of.Fd()), ob, int(nf.Fd()), nb, 0)
}
