package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/planrunner/runner/internal/sys/safefs"
	"golang.org/x/sys/unix"
)

// MappedRoot is the host uid and gid of the sandbox's root when runner
// runs as root: 2^31-2, above every range useradd gives out (UID_MAX
// 60000, SUB_UID_MAX 600100000) and apart from nobody (65534) and the
// 32-bit values tools read as -1 or -2, so no file or process of the
// host is its. The step still sees itself as uid 0; the host's kernel
// sees an unprivileged stranger.
const MappedRoot = 2147483646

// idMapping is how the sandbox's user namespace maps ids: the sandbox's
// uid and gid inside and the host's ones they stand for.
type idMapping struct {
	uidIn, uidHost, gidIn, gidHost int
	// mapped: runner is root and the sandbox's root is MappedRoot.
	mapped bool
}

// identity keeps the caller's uid and gid as themselves: an ordinary
// user, or root where its root cannot be mapped (optional).
func identity() idMapping {
	uid, gid := os.Getuid(), os.Getgid()
	return idMapping{uidIn: uid, uidHost: uid, gidIn: gid, gidHost: gid}
}

// rootMapping is the sandbox's root as MappedRoot (runner is root).
func rootMapping() idMapping {
	return idMapping{uidHost: MappedRoot, gidHost: MappedRoot, mapped: true}
}

// apply puts the mapping in a: uid and gid maps of one id each, and for
// a mapped root no supplementary groups (root's group 0 would otherwise
// still open what is readable by group root).
func (m idMapping) apply(a *syscall.SysProcAttr) {
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: m.uidIn, HostID: m.uidHost, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: m.gidIn, HostID: m.gidHost, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	if m.mapped {
		// Root writes the maps, so setgroups may stay allowed: the
		// helper clears the groups with it, and the command has no
		// CAP_SETGID to call it again.
		a.GidMappingsEnableSetgroups = true
		a.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	}
}

// The process that holds a user namespace with the mapped root's
// mapping, for idmapped mounts: recognised by argv[1] (see init_linux.go).
const helperUsernsArg = "--runner-sandbox-userns-v1"

var mappedNS struct {
	once sync.Once
	f    *os.File
	err  error
}

// mappedUserns is a user namespace with rootMapping's maps, for
// mount_setattr: made once per process (the process that held it is gone
// by then; the open fd keeps the namespace).
func mappedUserns() (*os.File, error) {
	mappedNS.once.Do(func() { mappedNS.f, mappedNS.err = newMappedUserns() })
	return mappedNS.f, mappedNS.err
}

func newMappedUserns() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	a := &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER, Pdeathsig: syscall.SIGKILL}
	m := rootMapping()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: m.uidIn, HostID: m.uidHost, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: m.gidIn, HostID: m.gidHost, Size: 1}}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{helperArg0, helperUsernsArg}, Dir: "/", Stdin: r, SysProcAttr: a}
	err = cmd.Start()
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("a user namespace for idmapped mounts: %w", err)
	}
	f, err := os.Open("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/user")
	w.Close() // the holder exits at EOF
	cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("a user namespace for idmapped mounts: %w", err)
	}
	return f, nil
}

// holdUserns is the holder's whole life: it waits for runner to close its
// stdin.
func holdUserns() {
	var b [1]byte
	for {
		if _, err := os.Stdin.Read(b[:]); err != nil {
			os.Exit(0)
		}
	}
}

// idmapTree is an idmapped copy of the mount tree at path, detached, for
// the helper to move in place; tests stand in a file system that refuses.
var idmapTree = openIdmapped

func openIdmapped(path string, userns *os.File) (*os.File, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return nil, &idmapError{path: path, op: "open_tree", err: err}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(userns.Fd())}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return nil, &idmapError{path: path, op: "mount_setattr", err: err}
	}
	return os.NewFile(uintptr(fd), "idmapped "+path), nil
}

// idmapError says which path could not be idmapped and on what file
// system (an old kernel, tmpfs before Linux 6.3, some overlayfs).
type idmapError struct {
	path, op string
	err      error
}

func (e *idmapError) Error() string {
	return fmt.Sprintf("%s (fs %s) cannot be idmapped: %s: %v", e.path, fsName(e.path), e.op, e.err)
}

func (e *idmapError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// idmapTrees opens an idmapped tree of each write path but skip (the
// private TMPDIR, chowned instead), and says which paths they are. The
// first that fails is the error, with the trees opened so far closed.
func idmapTrees(paths []string, skip string) (trees []*os.File, at []string, err error) {
	ns, err := mappedUserns()
	if err != nil {
		return nil, nil, fmt.Errorf("its write paths cannot be idmapped: %w (%w)", err, ErrUnavailable)
	}
	for _, p := range paths {
		if p == skip {
			continue
		}
		f, err := idmapTree(p, ns)
		if err != nil {
			closeAll(trees)
			return nil, nil, err
		}
		trees, at = append(trees, f), append(at, p)
	}
	return trees, at, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// fsName is the type of the file system at path, for messages.
func fsName(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "unknown"
	}
	switch int64(st.Type) {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay"
	case unix.NFS_SUPER_MAGIC:
		return "nfs"
	case unix.FUSE_SUPER_MAGIC:
		return "fuse"
	case unix.V9FS_MAGIC:
		return "9p"
	case unix.F2FS_SUPER_MAGIC:
		return "f2fs"
	case unix.SMB2_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC:
		return "cifs"
	}
	return "0x" + strconv.FormatInt(int64(st.Type), 16)
}

// chownPrivate gives the private TMPDIR to the mapped root, through an fd
// on the directory itself (never a link at its name).
func chownPrivate(dir string, m idMapping) error {
	return safefs.ChownDir(dir, m.uidHost, m.gidHost)
}

// errUnreachable: a path the sandbox's root cannot reach on the host
// (a directory above it that only root may search); the command cannot
// reach it either, so there is nothing to mount or protect there.
func errUnreachable(err error) bool {
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOENT)
}

// blockedAncestor is the highest directory above path that the helper
// (as the mapped root) cannot search, "" if none; a directory in or
// under one of trees (idmapped, the sandbox's root's own) is not looked
// at.
func blockedAncestor(path string, trees []string) string {
	a := "/"
	for _, c := range splitPath(path) {
		if under(a, trees) {
			return ""
		}
		if err := unix.Faccessat(unix.AT_FDCWD, a, unix.X_OK, unix.AT_EACCESS); err == unix.EACCES {
			return a
		}
		a = filepath.Join(a, c)
	}
	return ""
}

// splitPath is the components of an absolute path.
func splitPath(p string) []string {
	var out []string
	for p = filepath.Clean(p); p != "/"; p = filepath.Dir(p) {
		out = append([]string{filepath.Base(p)}, out...)
	}
	return out
}
