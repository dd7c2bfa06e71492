package sandbox

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock rights, by the ABI that introduced them.
const (
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llV1   = 1<<13 - 1 // EXECUTE ... MAKE_SYM
)

// landlockFS is every file-system right the ABI knows.
func landlockFS(abi int) uint64 {
	r := uint64(llV1)
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

// systemDirs are readable when Policy.Read narrows reading: what a shell,
// its tools and their libraries need.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store", "/proc", "/sys"}

// landlock restricts this thread (and what it starts) to the policy: reads
// under cfg.Read (or everywhere), everything under cfg.Write, the devices
// of /dev; with ABI 6, no signals to and no abstract Unix sockets of
// processes outside the sandbox.
func landlock(cfg *config) error {
	all := landlockFS(cfg.Landlock)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: all}
	if cfg.Landlock >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	}
	// The kernel reads as much of the struct as it knows (the rest, zero,
	// is checked to be zero), so the size is the one of the newest ABI.
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return &errHelper{"creating the Landlock ruleset", errno}
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	read := cfg.Read
	if read == nil {
		read = []string{"/"}
	} else {
		read = append(append([]string(nil), systemDirs...), read...)
	}
	dev := uint64(llRead | unix.LANDLOCK_ACCESS_FS_WRITE_FILE)
	if cfg.Landlock >= 3 {
		dev |= unix.LANDLOCK_ACCESS_FS_TRUNCATE // `> /dev/null` opens with O_TRUNC
	}
	if cfg.Landlock >= 5 {
		dev |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	rules := []struct {
		paths  []string
		access uint64
	}{
		{read, llRead},
		// /dev holds only the harmless devices; /proc is the sandbox's
		// own (a process writes its own /proc/self files, such as mem).
		{[]string{"/dev", "/proc"}, dev},
		{cfg.Write, all},
	}
	for _, r := range rules {
		for _, p := range r.paths {
			if err := landlockAllow(ruleset, p, r.access, cfg.Mapped); err != nil {
				return err
			}
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return &errHelper{"applying Landlock", errno}
	}
	return nil
}

// landlockAllow adds a rule for the tree under path; a path that does not
// exist is skipped (a system directory this distribution has not), and so
// are the rights a file cannot have (only a directory has READ_DIR and the
// MAKE/REMOVE ones). For the mapped root a path it cannot reach is
// skipped too: the command cannot reach it either.
func landlockAllow(ruleset int, path string, access uint64, mapped bool) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if os.IsNotExist(err) || (mapped && errUnreachable(err)) {
			return nil
		}
		return &errHelper{"Landlock: opening " + path, err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &errHelper{"Landlock: " + path, err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return &errHelper{"Landlock: allowing " + path, errno}
	}
	return nil
}
