package sandbox

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Classic BPF opcodes (linux/filter.h); BPF_LD, BPF_W and BPF_K are 0.
const (
	bpfLdWAbs = 0x20        // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK   = 0x05 | 0x10 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgeK   = 0x05 | 0x30 // BPF_JMP | BPF_JGE | BPF_K
	bpfRetK   = 0x06        // BPF_RET | BPF_K
)

// denyUnixSockets installs a seccomp filter on this thread (inherited by
// what it starts) that refuses socket(AF_UNIX, ...) with EACCES. A
// network namespace cuts a process off the host's TCP/IP, but not off
// its named Unix sockets, which are files: the Docker or containerd
// socket, an ssh or gpg agent, D-Bus, another run's live board. A
// read-only mount does not stop a connect(2), and Landlock up to ABI 7
// (Linux 6.18's) does not govern them. socketpair(2), which joins two ends of the process's
// own, stays allowed; io_uring, which makes sockets without socket(2),
// does not. Syscalls of another architecture (32-bit programs,
// x32), which could reach socket by other numbers, are refused. It
// returns false where the architecture is not known here.
func denyUnixSockets() (bool, error) {
	if auditArch == 0 {
		return false, nil
	}
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES))
	prog := []unix.SockFilter{
		{Code: bpfLdWAbs, K: 4}, // seccomp_data.arch
		{Code: bpfJeqK, K: auditArch, Jt: 0, Jf: 7},
		{Code: bpfLdWAbs, K: 0},                      // seccomp_data.nr
		{Code: bpfJgeK, K: 0x40000000, Jt: 5, Jf: 0}, // the x32 ABI's numbers
		// io_uring makes sockets without socket(2) (IORING_OP_SOCKET).
		{Code: bpfJeqK, K: unix.SYS_IO_URING_SETUP, Jt: 4, Jf: 0},
		{Code: bpfJeqK, K: unix.SYS_SOCKET, Jt: 0, Jf: 2},
		{Code: bpfLdWAbs, K: 16}, // seccomp_data.args[0], low half (little-endian)
		{Code: bpfJeqK, K: unix.AF_UNIX, Jt: 1, Jf: 0},
		{Code: bpfRetK, K: unix.SECCOMP_RET_ALLOW},
		{Code: bpfRetK, K: deny},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return false, &errHelper{"installing the seccomp filter", err}
	}
	return true, nil
}
