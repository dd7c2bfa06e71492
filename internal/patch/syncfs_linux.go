//go:build linux

package patch

import "golang.org/x/sys/unix"

// haveSyncFS: new contents may be written unsynced and made durable all
// at once with syncfs(2) before the first is renamed into place.
const haveSyncFS = true

func syncFS(fd uintptr) error { return unix.Syncfs(int(fd)) }
