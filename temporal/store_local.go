package temporal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/planrunner/runner/internal/sys/boot"
)

// DirStore is a Store in a local directory: the single-host default. Blobs
// are files named by their sha256 under a two-letter fan-out directory.
type DirStore struct{ Dir string }

// DefaultStoreDir is where blobs go when no store is given.
func DefaultStoreDir() string { return boot.DefaultStoreDir() }

func (s DirStore) String() string { return s.Dir }

// Put stores data and returns its name.
func (s DirStore) Put(data []byte) (string, error) {
	name := Sum(data)
	path := s.path(name)
	if _, err := os.Stat(path); err == nil {
		// Present: refresh its time, so gc's grace period counts from this
		// Put (a run starting now references it).
		now := timeNow()
		_ = os.Chtimes(path, now, now)
		return name, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := writeDurably(path, data, ".blob-*"); err != nil {
		return "", err
	}
	return name, nil
}

// writeDurably writes data to path through a temp file fsynced and renamed
// into place, then fsyncs the directory: a process killed mid-write leaves
// no half file under the name, and a power loss after writeDurably
// returned loses nothing (the name is handed on only after it returns).
func writeDurably(path string, data []byte, pattern string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil { // other users' workers read it
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// Get reads the blob name and checks its bytes against the name.
func (s DirStore) Get(name string) ([]byte, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("blob %s is not in the store %s (workers and the client must share it)", name, s.Dir)
	}
	if err != nil {
		return nil, err
	}
	return checked(s, name, data)
}

// List calls fn for every blob under Dir (temp files and the id left out).
func (s DirStore) List(ctx context.Context, fn func(BlobInfo) error) error {
	err := filepath.WalkDir(s.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") || validName(d.Name()) != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // deleted meanwhile
			}
			return err
		}
		return fn(BlobInfo{Name: d.Name(), Size: fi.Size(), Modified: fi.ModTime()})
	})
	return err
}

// Delete removes the blob name.
func (s DirStore) Delete(_ context.Context, name string) error {
	if err := validName(name); err != nil {
		return err
	}
	err := os.Remove(s.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func (s DirStore) path(name string) string { return filepath.Join(s.Dir, name[:2], name) }
