// Package memstore is agents' memory that outlives a run (seed 003's
// workspace memory): keys with versions, TTLs and provenance, kept in a
// store file that every run in a workdir (or every run naming the same
// store) shares.
//
// A store is a board file of its own (board.CreateStandalone), so it has
// what board entries have: versions, TTLs, authors, the step label and
// run that wrote each value, and the journal that makes it crash-safe.
// Each operation opens it under its lock (liveboard.Open) and closes it,
// so processes that use one store at once take turns and none loses a
// write. A run records what each memory call answered (the llm step
// offers the tools as recorded tool calls), so a replay reads the
// recording and needs no store.
//
// It may import internal/board and internal/liveboard; not the engine,
// the steps or the views.
package memstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
)

// Dir is where a workdir's stores are, relative to it.
const Dir = ".runner/memory"

// DefaultName is the store a workdir uses when none is named.
const DefaultName = "default"

// Path is the file of the store called name ("" for the default) in
// workdir. A name is letters, digits, '-' and '_'.
func Path(workdir, name string) (string, error) {
	if name == "" {
		name = DefaultName
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return "", fmt.Errorf("memory store %q: a name is letters, digits, - and _", name)
		}
	}
	return filepath.Join(workdir, Dir, name+".json"), nil
}

// Store is one memory store.
type Store struct {
	path string
	// Now replaces the clock (tests).
	Now func() time.Time
}

// Open names the store at path; the file is made by its first write.
func Open(path string) *Store { return &Store{path: path} }

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Provenance says who wrote a value: the agent (the entry's author), and
// the run and step visit it wrote in.
type Provenance struct {
	Agent string `json:"agent"`
	RunID string `json:"run_id,omitempty"`
	Label string `json:"label,omitempty"`
	Visit int    `json:"visit,omitempty"`
}

// Entry is a live memory entry.
type Entry struct {
	Key     string    `json:"key"`
	Value   any       `json:"value"`
	Version int64     `json:"version"`
	Written time.Time `json:"written"`
	Expires string    `json:"expires,omitempty"` // RFC 3339; "": never
	Provenance
}

func entryOf(e board.Entry) Entry {
	out := Entry{Key: e.Key, Value: e.Content, Version: e.Version, Written: e.TS, Provenance: Provenance{Agent: e.Author, Label: e.Label}}
	if id, ok := e.Meta["run_id"].(string); ok {
		out.RunID = id
	}
	if v, ok := e.Meta["visit"].(float64); ok {
		out.Visit = int(v)
	} else if v, ok := e.Meta["visit"].(int); ok {
		out.Visit = v
	}
	if e.TTL != nil {
		out.Expires = e.TS.Add(time.Duration(*e.TTL * float64(time.Second))).UTC().Format(time.RFC3339)
	}
	return out
}

func (s *Store) open(write bool) (liveboard.Access, error) {
	if _, err := os.Stat(s.path); errors.Is(err, os.ErrNotExist) {
		if !write {
			return nil, nil
		}
		if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
			return nil, err
		}
		if _, err := board.CreateStandalone(s.path, board.Run{}); err != nil {
			return nil, err
		}
	}
	return liveboard.Open(s.path, liveboard.Options{ReadOnly: !write, Now: s.Now})
}

// Write puts a value (ttl 0: it never expires); by is who writes it.
func (s *Store) Write(key string, value any, ttl time.Duration, by Provenance) (Entry, error) {
	if err := board.CheckKey(key); err != nil {
		return Entry{}, err
	}
	if ttl < 0 {
		return Entry{}, fmt.Errorf("memory key %q: ttl %s is negative", key, ttl)
	}
	a, err := s.open(true)
	if err != nil {
		return Entry{}, err
	}
	defer a.Close()
	b, err := a.Board()
	if err != nil {
		return Entry{}, err
	}
	meta := map[string]any{"via": "memory"}
	if by.RunID != "" {
		meta["run_id"] = by.RunID
	}
	if by.Visit > 0 {
		meta["visit"] = by.Visit
	}
	e, err := b.Write(board.WriteOp{Key: key, Value: value, TTL: ttl, Section: "memory", Author: by.Agent, Label: by.Label,
		Role: "memory", ExpectVersion: -1, Meta: meta, Handoff: true})
	if err != nil {
		return Entry{}, err
	}
	return entryOf(e), nil
}

// Read is the live value of key.
func (s *Store) Read(key string) (Entry, bool, error) {
	a, err := s.open(false)
	if err != nil || a == nil {
		return Entry{}, false, err
	}
	defer a.Close()
	e, ok, err := a.Read("", key)
	if err != nil || !ok {
		return Entry{}, false, err
	}
	return entryOf(e), true, nil
}

// List is the live entries whose keys start with prefix, by key.
func (s *Store) List(prefix string) ([]Entry, error) {
	a, err := s.open(false)
	if err != nil || a == nil {
		return nil, err
	}
	defer a.Close()
	es, err := a.Live(prefix, "")
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(es))
	for _, e := range es {
		out = append(out, entryOf(e))
	}
	return out, nil
}

// Remove deletes key; board.ErrAbsent when it has no live value.
func (s *Store) Remove(key string, by string) error {
	a, err := s.open(false)
	if err != nil {
		return err
	}
	if a == nil {
		return fmt.Errorf("memory key %q: %w (the store %s is empty)", key, board.ErrAbsent, s.path)
	}
	a.Close()
	if a, err = s.open(true); err != nil {
		return err
	}
	defer a.Close()
	_, err = a.Write(liveboard.WriteRequest{Key: key, Delete: true, Agent: by})
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "board: "))
	}
	return nil
}
