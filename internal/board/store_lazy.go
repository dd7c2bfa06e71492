package board

import (
	"encoding/json"
	"fmt"
	"time"
)

// A board loaded for reading a few keys (`runner board FILE get KEY`,
// `list`) decodes each entry's header only: its content and meta stay
// as the file's bytes until the entry is handed out (Get, ReadAs, Query,
// ...). On a 100 MB board, decoding every value into maps and strings
// cost several times the file in memory and more CPU than jq.

// lazyEntry is where an entry's content and meta are, undecoded: its
// line, at (at, n) in its file (store_lines.go). Small: a 100k-entry
// board holds 100k of them.
type lazyEntry struct {
	at   int64
	sum  uint64 // the line's hash
	n    int32
	refs bool // the line names blobs (src.blobRefs)
	src  *lineSource
}

// line appends the entry's line to dst; seq names it in an error.
func (lz *lazyEntry) line(dst []byte, seq int64) ([]byte, error) {
	return lz.src.read(dst, lz.at, int(lz.n), lz.sum, "entry seq", seq)
}

// blobRefs are the blobs the entry's line names.
func (lz *lazyEntry) blobRefs() []string {
	if !lz.refs {
		return nil
	}
	return lz.src.blobRefs(lz.at)
}

// entryHead is an entry without its content and meta: what the key
// index, versions and expiry need.
type entryHead struct {
	ID      string    `json:"id"`
	Seq     int64     `json:"seq"`
	Section string    `json:"section"`
	Role    string    `json:"role"`
	Author  string    `json:"author"`
	Label   string    `json:"label"`
	Key     string    `json:"key"`
	Version int64     `json:"version"`
	Topic   string    `json:"topic"`
	TS      time.Time `json:"ts"`
	TTL     *float64  `json:"ttl_s"`
	Deleted bool      `json:"deleted"`
	Refs    []string  `json:"blob_refs"`
	Meta    metaShape `json:"meta"` // checked, not decoded (store_rawsave.go)
}

// entry fills e, and lz where its content is (its line's place and
// hash set by the caller), from the header (both parts of blocks the
// file's entries are allocated in at once).
func (h *entryHead) entry(t *blobTable, e *Entry, lz *lazyEntry) error {
	if len(h.Refs) > 0 {
		if _, err := t.check(fmt.Sprintf("entry seq %d (id %s)", h.Seq, h.ID), h.Refs); err != nil {
			return err
		}
	}
	if len(h.Refs) > 0 {
		lz.refs = true
		lz.src.setBlobRefs(lz.at, h.Refs)
	}
	*e = Entry{ID: h.ID, Seq: h.Seq, Section: h.Section, Role: h.Role, Author: h.Author, Label: h.Label,
		Key: h.Key, Version: h.Version, Topic: h.Topic, TS: h.TS, TTL: h.TTL, Deleted: h.Deleted, lazy: lz}
	return nil
}

// loaded is the entry with its content and meta decoded.
func (e *Entry) loaded() Entry {
	if e.lazy == nil {
		return e.unpacked()
	}
	in := entryIn{Entry: new(Entry)}
	line, err := e.lazy.line(nil, e.Seq)
	// As Load decodes lines; encoding/json for what that decoder does
	// not take (its CPU was most of a replay's check of its board).
	if d := (lineDec{}); err == nil && !d.entry(line, &in) {
		*in.Entry = Entry{}
		in.Refs = nil
		err = json.Unmarshal(line, &in)
	}
	if err == nil {
		err = e.lazy.src.t.resolveEntry(in.Entry, in.Refs)
	}
	if err != nil { // its header read: a value of the wrong type, or its line no longer in the file as read
		out := *e
		out.lazy = nil
		out.Content = fmt.Sprintf("[entry %d: its content could not be read: %v]", e.Seq, err)
		return out
	}
	return *in.Entry
}

// LoadForRead is Load for reading: entries' contents are decoded when
// handed out. The board is for reading only (it has no journal; a write
// would compare against contents it has not decoded).
func LoadForRead(path string) (*Board, error) { return loadReadOnly(path, lazyEntries) }

// loadReadOnly reads a saved run lazily, as lazy says, for reading only.
func loadReadOnly(path string, lazy laziness) (*Board, error) {
	b, err := loadLazy(path, lazy)
	if err != nil {
		return nil, err
	}
	b.readOnly = true
	return b, nil
}
