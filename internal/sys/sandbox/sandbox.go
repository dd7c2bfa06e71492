// Package sandbox confines a process that runs code runner did not write
// (a model's diff under test, a script a model chose), the way coding
// agents confine theirs, with the kernel's own mechanisms:
//
//   - user, mount, PID, network, IPC and UTS namespaces: the process sees
//     its own processes only (a fresh /proc), no network but its own
//     loopback (unless Policy.Network) and the one host address of
//     Policy.Endpoint, and a file system mounted
//     read-only except the paths it may write;
//   - a minimal /dev (null, zero, full, random, urandom, a private
//     /dev/shm and /dev/pts); /proc's host-wide files (sys, sysrq-trigger,
//     irq, ...) read-only, its kernel memory and keys covered;
//   - a session of its own, with no controlling terminal, no /dev/tty and
//     no fd on runner's terminal: it cannot type into the person's shell
//     or read what they type;
//   - no_new_privs, every capability dropped (bounding and ambient sets
//     included) and securebits that keep uid 0 from regaining them, so
//     setuid binaries and file capabilities grant nothing;
//   - Landlock where the kernel has it: the same write rules again,
//     reads narrowed to Policy.Read when given, and (ABI 6) no signals or
//     abstract Unix sockets outside the sandbox;
//   - a seccomp filter: no terminal-injecting ioctls, and without network
//     no Unix sockets.
//
// A strict sandbox on a kernel that lacks one of these is an error.
// It imports only the standard library, golang.org/x/sys and
// internal/sys/safefs.
//
// runner re-executes itself (/proc/self/exe) as the sandbox's first
// process: that process sets the sandbox up inside the new namespaces,
// starts the command and stays as its init, reaping orphans and passing
// on the command's exit status. The hook is this package's init, so any
// binary that links the package, test binaries included, can start
// sandboxed processes.
package sandbox

import "errors"

// Policy says what a sandboxed process may do beyond the defaults.
type Policy struct {
	// Optional runs the process as confined as the kernel allows (and
	// says what it lacked in the Report) where the kernel lacks part of
	// what the sandbox takes, unconfined where it cannot sandbox at all;
	// otherwise (strict) either is an error naming what is missing.
	Optional bool
	// Network keeps the host's network; without it the process has only
	// a loopback interface of its own.
	Network bool
	// Endpoint, without Network, is the one TCP address of the host
	// (host:port) the process may still reach, at the same address in
	// its own network namespace: the helper listens there and has runner
	// connect each connection it accepts on the host. A coding agent's
	// model proxy is one.
	Endpoint string
	// Write are the paths (absolute) the process may write besides the
	// private temporary directory: its workdir, the run's directory, the
	// build caches.
	Write []string
	// ReadOnly are paths inside writable ones that stay read-only (runner's
	// own files: other runs, this run's board and journal).
	ReadOnly []string
	// Hide are files replaced by an empty one in the sandbox: a Unix
	// socket (runner's live board), which a read-only mount does not keep
	// a process from connecting to.
	Hide []string
	// Read, when not nil, narrows reading to these paths (absolute), the
	// writable ones and the system's directories (/usr, /bin, /lib, /etc,
	// ...); it needs Landlock. nil: the whole file system reads.
	Read []string
}

// Report is what a step's result records of its sandbox.
type Report struct {
	// Mode is strict (confinement or an error) or optional.
	Mode string `json:"mode"`
	// Active: the process ran confined.
	Active bool `json:"active"`
	// Landlock is the Landlock ABI applied on top of the namespaces
	// (0: none; the kernel lacks it).
	Landlock int  `json:"landlock,omitempty"`
	Network  bool `json:"network"`
	// Seccomp: a seccomp filter refuses terminal-injecting ioctls and,
	// without network, Unix sockets.
	Seccomp bool `json:"seccomp,omitempty"`
	// Write and Read are the paths the policy opened (Read empty: all).
	// A step's result keeps the plan's own paths as written (see
	// steps), not where they were on the host, so a replay elsewhere
	// records the same sandbox.
	Write []string `json:"write,omitempty"`
	Read  []string `json:"read,omitempty"`
	// Caches are the build caches the plan opened by name (go).
	Caches []string `json:"caches,omitempty"`
	// Missing is what the kernel lacked (optional only): everything when
	// Active is false, or a part (Landlock, seccomp) when it is true.
	Missing string `json:"missing,omitempty"`
}

// ErrUnavailable is wrapped by the errors of a kernel that cannot give a
// sandbox; the message says what is missing.
var ErrUnavailable = errors.New("the kernel cannot sandbox this step")
