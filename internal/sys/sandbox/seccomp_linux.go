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

// Offsets in struct seccomp_data (the low half of a 64-bit argument on a
// little-endian machine, which the architectures known here are).
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArg0 = 16
	seccompArg1 = 24
)

// terminalIoctls are the ioctls that put input on a terminal, as if the
// person typed it (TIOCSTI, TIOCLINUX's paste), or take its console output
// (TIOCCONS). A sandboxed process has no terminal of the person's to use
// them on (see Wrap); refusing them is the second wall. The kernel reads
// the request as 32 bits, so the low half is the whole of it.
var terminalIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCCONS}

// installSeccomp installs a seccomp filter on this thread (inherited by
// what it starts). It always refuses terminalIoctls (EPERM). With
// denySockets it also refuses socket(AF_UNIX, ...) with EACCES: a network
// namespace cuts a process off the host's TCP/IP, but not off its named
// Unix sockets, which are files: the Docker or containerd socket, an ssh
// or gpg agent, D-Bus, another run's live board. A read-only mount does
// not stop a connect(2), and Landlock up to ABI 7 (Linux 6.18's) does not
// govern them. socketpair(2), which joins two ends of the process's own,
// stays allowed; io_uring, which makes sockets without socket(2), does
// not. Syscalls of another architecture (32-bit programs, x32), which
// could reach either by other numbers, are refused.
func installSeccomp(denySockets bool) error {
	if auditArch == 0 {
		return &errHelper{"seccomp", errNoSeccompArch}
	}
	prog := seccompProgram(denySockets)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return &errHelper{"installing the seccomp filter", err}
	}
	return nil
}

// seccompProgram is the filter installSeccomp installs.
func seccompProgram(denySockets bool) []unix.SockFilter {
	var b bpf
	b.ld(seccompArch)
	b.jne(auditArch, "deny")
	b.ld(seccompNr)
	b.jge(0x40000000, "deny") // the x32 ABI's numbers
	b.jeq(unix.SYS_IOCTL, "ioctl")
	if denySockets {
		b.jeq(unix.SYS_IO_URING_SETUP, "deny") // IORING_OP_SOCKET
		b.jne(unix.SYS_SOCKET, "allow")
		b.ld(seccompArg0)
		b.jeq(unix.AF_UNIX, "deny")
	}
	b.ret(unix.SECCOMP_RET_ALLOW, "allow")
	b.label("ioctl")
	b.ld(seccompArg1)
	for _, req := range terminalIoctls {
		b.jeq(req, "deny-ioctl")
	}
	b.ret(unix.SECCOMP_RET_ALLOW, "")
	b.ret(unix.SECCOMP_RET_ERRNO|uint32(unix.EACCES), "deny")
	b.ret(unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM), "deny-ioctl")
	return b.assemble()
}

// bpf assembles a classic BPF program whose jumps name labels (forward
// only, as BPF's are).
type bpf struct {
	prog   []unix.SockFilter
	labels map[string]int
	jumps  []jump
}

type jump struct {
	at     int
	to     string
	ifTrue bool
}

func (b *bpf) ld(off uint32) { b.prog = append(b.prog, unix.SockFilter{Code: bpfLdWAbs, K: off}) }

func (b *bpf) cond(code uint16, k uint32, to string, ifTrue bool) {
	b.jumps = append(b.jumps, jump{len(b.prog), to, ifTrue})
	b.prog = append(b.prog, unix.SockFilter{Code: code, K: k})
}

// jeq jumps to label when A == k, jne when A != k, jge when A >= k; each
// goes on with the next instruction otherwise.
func (b *bpf) jeq(k uint32, label string) { b.cond(bpfJeqK, k, label, true) }
func (b *bpf) jne(k uint32, label string) { b.cond(bpfJeqK, k, label, false) }
func (b *bpf) jge(k uint32, label string) { b.cond(bpfJgeK, k, label, true) }

func (b *bpf) label(name string) {
	if b.labels == nil {
		b.labels = map[string]int{}
	}
	b.labels[name] = len(b.prog)
}

// ret returns k, at label (when not empty).
func (b *bpf) ret(k uint32, label string) {
	if label != "" {
		b.label(label)
	}
	b.prog = append(b.prog, unix.SockFilter{Code: bpfRetK, K: k})
}

func (b *bpf) assemble() []unix.SockFilter {
	for _, j := range b.jumps {
		to, ok := b.labels[j.to]
		if !ok || to <= j.at || to-j.at-1 > 255 {
			panic("seccomp: bad jump to " + j.to)
		}
		if j.ifTrue {
			b.prog[j.at].Jt = uint8(to - j.at - 1)
		} else {
			b.prog[j.at].Jf = uint8(to - j.at - 1)
		}
	}
	return b.prog
}
