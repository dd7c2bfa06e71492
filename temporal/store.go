// Package temporal runs runner's plans on Temporal: the interpreter is one
// deterministic workflow (workflow.go), steps that touch the world are
// activities (activity.go). It is a Go module of its own, so the default
// runner binary never compiles the Temporal SDK.
package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Store keeps content-addressed blobs: a blob's name is the sha256 of its
// bytes, so a name says what it holds forever and writing twice is
// harmless. The board's history, plan sources and large payloads travel
// through it as names, so no Temporal payload nears its 2 MB limit. Every
// worker and client of a run must see the same store: a local directory on
// one host (DirStore, the default) or an S3-compatible bucket shared by
// every host (S3Store). OpenStore makes either from a --store value.
//
// Put returns only once the blob is durable (fsynced, or acknowledged by
// the object store): a name is handed on (to a workflow, a history) only
// after that, so nothing ever references a blob a crash could lose.
type Store interface {
	// Put stores data and returns its name, Sum(data).
	Put(data []byte) (string, error)
	// Get reads the blob name and checks its bytes against the name.
	Get(name string) ([]byte, error)
	// ID is the store's identity (storeid.go): a random id written once,
	// when the store is first used. Two handles with the same ID are the
	// same store; a worker and a run whose store IDs differ do not share
	// blobs and are refused.
	ID() (string, error)
	// String says where the store is, for messages: never a credential.
	String() string
}

// Sweeper is a Store whose blobs can be listed and deleted: what
// `runner-temporal gc` needs (gc.go).
type Sweeper interface {
	Store
	// List calls fn for every blob, in no particular order.
	List(ctx context.Context, fn func(BlobInfo) error) error
	// Delete removes the blob name; a blob already gone is no error.
	Delete(ctx context.Context, name string) error
}

// BlobInfo is one blob as List sees it.
type BlobInfo struct {
	Name     string
	Size     int64
	Modified time.Time // when it was last written (a Put of a blob present refreshes it)
}

// Sum is the name of data.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// validName reports whether name can be a blob's: 64 lowercase hex digits.
// Checked before a name reaches a path or an object key.
func validName(name string) error {
	if len(name) != 64 {
		return fmt.Errorf("blob %q: not a sha256 name", name)
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("blob %q: not a sha256 name", name)
		}
	}
	return nil
}

// checked returns data if it matches name, else says the blob is damaged.
func checked(s Store, name string, data []byte) ([]byte, error) {
	if Sum(data) != name {
		return nil, fmt.Errorf("blob %s in %s is damaged: its content does not match its name", name, s)
	}
	return data, nil
}
