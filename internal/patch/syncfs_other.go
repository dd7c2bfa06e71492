//go:build !linux

package patch

import "errors"

// haveSyncFS is false: each new content is fsynced as it is written.
const haveSyncFS = false

func syncFS(fd uintptr) error { return errors.ErrUnsupported }
