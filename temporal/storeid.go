package temporal

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A store's identity is a small object, runner-store.json, written once
// when the store is first used and never changed: {"id": "<random>"}.
// A run records the id of the store its client used (StartOptions, the
// workflow's memo); a worker reads its own store's id when it starts and
// refuses to poll for runs of another store (CheckStoreID), and a step
// whose run names another store fails without retrying. Two hosts
// pointing at "the same" directory or bucket that is not the same (a
// local directory on each, a typo in a prefix) are told so at once, not
// minutes later as missing blobs.
const storeIDFile = "runner-store.json"

// storeIdentity is runner-store.json's content.
type storeIdentity struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// timeNow is time.Now; a variable so gc's tests can age blobs.
var timeNow = time.Now

func newStoreIdentity() ([]byte, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return json.Marshal(storeIdentity{ID: "rs-" + hex.EncodeToString(b[:]), Created: timeNow().UTC()})
}

func parseStoreIdentity(where string, data []byte) (string, error) {
	var id storeIdentity
	if err := json.Unmarshal(data, &id); err != nil || id.ID == "" {
		return "", fmt.Errorf("%s: not a store identity (want {\"id\": ...}); delete it only if the store is empty", where)
	}
	return id.ID, nil
}

// ID reads Dir/runner-store.json, creating it (and Dir) on first use. Two
// processes creating it at once agree: the file is linked into place only
// if absent, and whoever loses reads the winner's.
func (s DirStore) ID() (string, error) {
	path := filepath.Join(s.Dir, storeIDFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			return "", err
		}
		fresh, err := newStoreIdentity()
		if err != nil {
			return "", err
		}
		tmp := filepath.Join(s.Dir, fmt.Sprintf(".id-%d-%d", os.Getpid(), timeNow().UnixNano()))
		if err := writeDurably(tmp, fresh, ".id-*"); err != nil {
			return "", err
		}
		lerr := os.Link(tmp, path) // fails if another process won
		os.Remove(tmp)
		if lerr != nil && !errors.Is(lerr, os.ErrExist) {
			return "", fmt.Errorf("writing the store identity %s: %w", path, lerr)
		}
		if lerr == nil {
			if err := syncDir(s.Dir); err != nil {
				return "", err
			}
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("reading the store identity: %w", err)
	}
	return parseStoreIdentity(path, data)
}
