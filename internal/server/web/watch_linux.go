package web

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchDirs calls ready once it watches, then on for every change inside dirs (the path changed, and
// whether it is a directory just made, which on may ask to be watched
// too) until ctx ends. On Linux it is inotify: the kernel says what
// changed, so nothing is read again on a timer, however many runs there
// are.
func watchDirs(ctx context.Context, dirs []string, ready func(), on func(path string, newDir bool) (watch bool)) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return os.NewSyscallError("inotify_init1", err)
	}
	// A non-blocking descriptor is read through Go's poller, so closing
	// the file ends a pending read.
	f := os.NewFile(uintptr(fd), "inotify")
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	defer f.Close()
	const mask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
		unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_ONLYDIR
	watched := map[int32]string{}
	add := func(dir string) {
		wd, err := unix.InotifyAddWatch(fd, dir, mask)
		if err == nil {
			watched[int32(wd)] = dir
		}
	}
	// adopt watches a new directory, and what was made in it before
	// the watch was (mkdir -p makes a run's directories at once).
	var adopt func(dir string)
	adopt = func(dir string) {
		add(dir)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if on(p, e.IsDir()) && e.IsDir() {
				adopt(p)
			}
		}
	}
	for _, d := range dirs {
		add(d)
	}
	ready()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				for i, c := range raw {
					if c == 0 {
						raw = raw[:i]
						break
					}
				}
				name = string(raw)
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			dir, ok := watched[ev.Wd]
			if !ok {
				continue
			}
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(watched, ev.Wd)
				continue
			}
			p := dir
			if name != "" {
				p = filepath.Join(dir, name)
			}
			newDir := ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0
			if on(p, newDir) && newDir {
				adopt(p)
			}
		}
	}
}
