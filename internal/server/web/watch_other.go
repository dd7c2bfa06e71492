//go:build !linux

package web

import (
	"context"
	"os"
	"path/filepath"
	"time"
)

// watchDirs calls ready once it watches, then on for every change inside dirs until ctx ends. Without
// inotify it compares the directories' listings (names, sizes, times)
// every 250 ms: one comparison per open page, of its own directories.
func watchDirs(ctx context.Context, dirs []string, ready func(), on func(path string, newDir bool) (watch bool)) error {
	type stamp struct {
		size int64
		mod  time.Time
		dir  bool
	}
	seen := map[string]stamp{}
	scan := func(first bool) {
		for i := 0; i < len(dirs); i++ {
			ents, err := os.ReadDir(dirs[i])
			if err != nil {
				continue
			}
			for _, e := range ents {
				p := filepath.Join(dirs[i], e.Name())
				fi, err := e.Info()
				if err != nil {
					continue
				}
				st := stamp{fi.Size(), fi.ModTime(), fi.IsDir()}
				old, ok := seen[p]
				seen[p] = st
				if first {
					continue
				}
				if !ok || old != st {
					if on(p, !ok && st.dir) && !ok && st.dir {
						dirs = append(dirs, p)
					}
				}
			}
		}
	}
	scan(true)
	ready()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			scan(false)
		}
	}
}
