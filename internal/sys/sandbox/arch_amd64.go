//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// auditArch is the seccomp architecture of this build.
const auditArch = unix.AUDIT_ARCH_X86_64
