// Package temporal runs runner's plans on Temporal: the interpreter is one
// deterministic workflow (workflow.go), steps that touch the world are
// activities (activity.go). It is a Go module of its own, so the default
// runner binary never compiles the Temporal SDK.
package temporal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Store keeps content-addressed blobs: a blob's name is the sha256 of its
// bytes, so a name says what it holds forever and writing twice is
// harmless. The board's history, plan sources and large payloads travel
// through it as names, so no Temporal payload nears its 2 MB limit. Every
// worker and client of a run must see the same store: one directory on one
// host, or a shared directory across hosts.
type Store struct{ Dir string }

// DefaultStoreDir is where blobs go when no directory is given.
func DefaultStoreDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "runner-temporal", "blobs")
}

// Sum is the name of data.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Put stores data and returns its name.
func (s Store) Put(data []byte) (string, error) {
	name := Sum(data)
	path := s.path(name)
	if _, err := os.Stat(path); err == nil {
		return name, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	// A temp file renamed into place: a process killed mid-write leaves no
	// half blob under the name. Not fsynced, like a local run's journal
	// without --sync: a blob survives the process, not a power loss.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".blob-*")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return name, nil
}

// Get reads the blob name and checks its bytes against the name.
func (s Store) Get(name string) ([]byte, error) {
	if len(name) != 64 {
		return nil, fmt.Errorf("blob %q: not a sha256 name", name)
	}
	data, err := os.ReadFile(s.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("blob %s is not in the store %s (workers and the client must share it)", name, s.Dir)
	}
	if err != nil {
		return nil, err
	}
	if Sum(data) != name {
		return nil, fmt.Errorf("blob %s in %s is damaged: its content does not match its name", name, s.Dir)
	}
	return data, nil
}

func (s Store) path(name string) string { return filepath.Join(s.Dir, name[:2], name) }
