package board

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
)

// Resuming a large run reads the board once and lazily: each
// entry's header is decoded (key, version, author, times: what the key
// index, versions, expiry and conflicts need), its content and meta only
// when a step reads it (see store_lazy.go). The file written at the end holds
// those entries' lines as they were read, instead of decoding and
// encoding them again: the run's new entries are the only ones encoded.
// A line read is valid JSON (its header decoding checked it) whose meta
// is an object or null, so it reads back as the entry it was; its large
// strings stay in the blob table, copied over to the new file's.

// LoadToResume reads a saved run, folding in its journal, to go on with
// it (runner resume, then Attach): Load, with each entry's content and
// meta decoded only when handed out, and written back as read when the
// board is saved. Unlike LoadForRead, the board takes writes.
func LoadToResume(path string) (*Board, error) { return loadLazy(path, lazyEntries) }

// loadLazy reads a saved run and folds in its journal, decoding each
// entry's content and meta only when handed out.
func loadLazy(path string, lazy laziness) (*Board, error) {
	b, err := load(path, lazy)
	if err != nil {
		return nil, err
	}
	b.loadBlobs = nil
	return b, nil
}

// rawLine appends to dst the entry's line as read from the file, its
// blobs added to the table x is writing; nil for an entry decoded or made
// in this process, which is encoded.
func (r *entryRow) rawLine(dst []byte, x *blobSink, seq int64) ([]byte, error) {
	lz := r.lazy()
	if lz == nil {
		return nil, nil
	}
	for _, k := range lz.blobRefs() {
		lz.src.t.keepIn(x, k) // checked present when the header was read
	}
	return lz.line(dst, seq)
}

// keep adds a value read from a file, as its literal, to the table being
// written, outside the record being encoded (whose line lists its refs
// already); text, when decoded, is its text (blobSink.slices).
func (s *blobSink) keep(key string, lit []byte, text string) {
	if !s.known[key] && !s.have[key] {
		s.have[key] = true
		s.table = append(s.table, blob{key: key, lit: lit, s: text})
	}
}

// metaShape checks, without decoding it, that an entry's meta is what
// Entry.Meta can hold (an object or null): the header of a lazily read
// entry does not decode it, and its line is written back as it is.
type metaShape struct{}

func (metaShape) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && (data[0] == '{' || string(data) == "null") {
		return nil
	}
	return errMetaShape
}

var errMetaShape = errors.New(`"meta" is not an object`)

var _ json.Unmarshaler = metaShape{}

// writeRun writes the run object as json.Marshal would, its plan source
// quoted piece by piece into w: marshalled whole, a 100k-step plan's 10
// MB source grew a buffer to more than its size, whose fresh pages cost
// 7% of a resume's CPU.
func writeRun(w *bufio.Writer, run *Run) error {
	lean := *run
	lean.PlanSource = ""
	data, err := json.Marshal(&lean)
	if err != nil {
		return err
	}
	// The first such bytes are the field: a quote inside a string value
	// before it is escaped.
	const empty = `"plan_source":""`
	i := bytes.Index(data, []byte(empty))
	if i < 0 || run.PlanSource == "" {
		_, err := w.Write(data)
		return err
	}
	w.Write(data[:i+len(empty)-2])
	src := blob{s: run.PlanSource}
	if _, err := src.writeTo(w, nil); err != nil {
		return err
	}
	_, err = w.Write(data[i+len(empty):])
	return err
}
