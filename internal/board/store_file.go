package board

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/planrunner/runner/internal/bigjson"
	"github.com/planrunner/runner/internal/sys/readlimit"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// Format is the value of the "format" field of blackboard.json.
const Format = "runner.blackboard/v1"

// File is blackboard.json (docs/spec.md §3).
type File struct {
	Format     string     `json:"format"`
	Run        Run        `json:"run"`
	Steps      []stepIn   `json:"steps"`
	Entries    []*entryIn `json:"entries"`
	Recordings []recIn    `json:"recordings"`
	// Blobs are the large strings, stored once (see store_blob.go): key ->
	// the value's JSON string.
	Blobs map[string]json.RawMessage `json:"blobs,omitempty"`
	// JournalN is how many journal records the file already holds; on load,
	// journal records numbered at or below it are skipped, so a crash
	// between writing the file and truncating the journal duplicates nothing.
	JournalN int64 `json:"journal_n"`

	hasRun bool       // the file has a "run" object (see checkTop)
	table  *blobTable // Blobs, checked
}

// FileMode is the mode of a run's files (blackboard.json, its journal and
// lock): a board holds model answers, outputs and the plan, which are the
// user's alone. Private whatever the umask.
const FileMode os.FileMode = 0o600

// DirMode is the mode of a run's directory.
const DirMode os.FileMode = 0o700

// JournalPath is where the journal of a blackboard file lives.
func JournalPath(path string) string { return path + ".journal" }

// Options control persistence.
type Options struct {
	// Sync fsyncs the journal after every record: a finished step then
	// survives a power loss, not only the process being killed.
	Sync bool
	// Redact masks secrets in everything that enters the board from now
	// on (see Redact); nil: nothing is masked.
	Redact Redact
}

// Create starts a saved run at path: it writes blackboard.json (atomically)
// and opens an empty journal beside it. The file exists from then on.
func Create(path string, run Run, opt Options) (*Board, error) {
	b := New(run)
	b.redact = opt.Redact
	b.redactRun(&b.run)
	b.journal = &journal{path: JournalPath(path), file: path, sync: opt.Sync}
	if err := b.saveLocked(); err != nil {
		return nil, err
	}
	return b, nil
}

// Open loads a saved run for continuing it (resume): the file plus its
// journal, and further changes go to the journal again.
func Open(path string, opt Options) (*Board, error) {
	b, err := Load(path)
	if err != nil {
		return nil, err
	}
	b.journal = &journal{path: JournalPath(path), file: path, sync: opt.Sync}
	b.redact = opt.Redact
	// Fold the journal into the file now, so a torn tail is dropped
	// before new records are appended after it.
	if err := b.Save(); err != nil {
		return nil, err
	}
	return b, nil
}

// OpenAppend is Open for a short write by a process holding the run's
// lock (a CLI put): it appends to the journal after the records already
// there instead of rewriting the file, so a write costs a load and one
// journal line. The journal is folded into the file only when its last
// line is torn, or when it has grown past 4 MiB.
func OpenAppend(path string, opt Options) (*Board, error) {
	b, err := Load(path)
	if err != nil {
		return nil, err
	}
	b.journal = &journal{path: JournalPath(path), file: path, sync: opt.Sync}
	b.redact = opt.Redact
	if fi, err := os.Stat(b.journal.path); b.torn || (err == nil && fi.Size() > 4<<20) {
		if err := b.Save(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Attach continues the run b was loaded from (by Load, from path) as
// Open does, without reading the file a second time: further changes go
// to path's journal. As with OpenAppend, the journal is folded into the
// file only when its last line is torn or it has grown past 4 MiB, so
// resuming a large run does not rewrite its file before the first step.
func (b *Board) Attach(path string, opt Options) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.journal = &journal{path: JournalPath(path), file: path, sync: opt.Sync}
	b.redact = opt.Redact
	if fi, err := os.Stat(b.journal.path); b.torn || (err == nil && fi.Size() > 4<<20) {
		return b.saveLocked()
	}
	return nil
}

// Load reads a saved run, folding in its journal, into an in-memory board.
func Load(path string) (*Board, error) {
	b, err := load(path, decodeAll)
	if err != nil {
		return nil, err
	}
	b.loadBlobs = nil // the values are in the records now; the keys stay known
	return b, nil
}

// laziness is what a load leaves in the file, read back when asked for.
type laziness uint8

const (
	decodeAll   laziness = iota // nothing: Load
	lazyEntries                 // the entries' contents (store_lazy.go)
	lazySteps                   // those and the step records (store_leansteps.go)
)

// load reads a saved run and folds in its journal, leaving in the file
// what lazy says.
func load(path string, lazy laziness) (*Board, error) {
	f, err := openSaved(path)
	if err != nil {
		return nil, err
	}
	b, src, size, err := readBoard(f, path, lazy)
	if src == nil || src.f == nil || err != nil {
		f.Close()
	}
	if err != nil {
		return nil, err
	}
	settle(size)
	if err := b.foldJournal(JournalPath(path)); err != nil {
		return nil, err
	}
	return b, nil
}

// readBoard reads the saved run in f, its entries' lines left in src when
// lazy: a part at a time when large (store_text.go), else, or when it
// does not decode so, whole.
func readBoard(f *os.File, path string, lazy laziness) (b *Board, src *lineSource, size int, err error) {
	source := func(size int) *lineSource {
		if lazy == decodeAll {
			return nil
		}
		if linesOnDisk(size) {
			s := newLineSource(path, f)
			s.steps = lazy == lazySteps
			return s
		}
		return newLineSource(path, nil)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() >= settleMin &&
		fi.Size() <= readlimit.Limit(readlimit.Board) && int64(int(fi.Size())) == fi.Size() {
		size := int(fi.Size())
		if l, err := scanFile(f, size); err == nil && l.list[1].hi != 0 {
			src := source(size)
			if b, err := parseLines(&text{f: f, size: size}, &l, src); err == nil {
				return b, src, size, nil
			}
		}
	}
	// scanFile and the parts read at their offsets: f's is at its start.
	data, err := readlimit.FromFile(f, path, readlimit.Board)
	if err != nil {
		return nil, nil, 0, err
	}
	src = source(len(data))
	if b, err = parseFile(data, src); err != nil {
		return nil, nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return b, src, len(data), nil
}

// settle has the collector take back, once a large file is read, what
// reading it left (the file's bytes, the records decoded from it): the
// heap may grow to twice what was live at the last collection, and that
// fell while the file was read, the file held beside the board being
// built. What a resume, a replay or a report does next (a plan
// compiled, a page made) then grew the heap to twice the load's height,
// not twice the board's. One collection is a few hundredths of a second
// at 100k steps; a 10k-step run's resume peaks a sixth lower with it
// (7 MB); below settleMin, what is left is too little to matter.
func settle(size int) {
	if size >= settleMin {
		runtime.GC()
	}
}

const settleMin = 1 << 20

// openSaved opens a saved run's file. Only a regular file is: a FIFO
// would block the open for good, and a device (/dev/zero) never ends.
func openSaved(path string) (*os.File, error) {
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	return os.Open(path)
}

// CheckSaved refuses, without opening it, a path that cannot be a saved
// run: anything but a regular file (a FIFO would block for good, a device
// never ends).
func CheckSaved(path string) error { return checkRegular(path) }

// CheckNew refuses a path a person named for a new run's board (--out)
// where something other than a file stands (a device such as /dev/null, a
// FIFO, a directory). A board is a file runner replaces as the run goes,
// its journal and lock beside it; replacing a device would destroy it.
func CheckNew(path string) error {
	err := readlimit.CheckRegular(path)
	var pe *os.PathError
	if err == nil || errors.As(err, &pe) { // a regular file, or none
		return nil
	}
	return fmt.Errorf("%w: a run's board is saved as a file, replaced as the run goes, with its journal and lock beside it; name a file", err)
}

// checkRegular refuses what is not a regular file, without opening it.
func checkRegular(path string) error {
	err := readlimit.CheckRegular(path)
	var pe *os.PathError
	if err != nil && !errors.As(err, &pe) { // not a stat error: the kind of file
		return fmt.Errorf("%w: a saved run is one", err)
	}
	return err
}

// Parse reads a blackboard.json held in memory (a live run's board served
// over its socket, say), without a journal.
func Parse(data []byte) (*Board, error) {
	b, err := parse(data)
	if err != nil {
		return nil, err
	}
	b.loadBlobs = nil
	return b, nil
}

// parse is Parse keeping the file's blob table, for its journal's lines.
func parse(data []byte) (*Board, error) { return parseFile(data, nil) }

// parseFile is parse, with entries decoded lazily (see store_lazy.go),
// their lines in lazy, or not (nil).
func parseFile(data []byte, lazy *lineSource) (*Board, error) {
	l := scanLayout(data)
	if l.list[1].hi == 0 {
		f, err := decodeWhole(data)
		if err != nil {
			return nil, notBoard(data, err)
		}
		return boardOf(f)
	}
	return parseLines(wholeText(data), &l, lazy)
}

// notBoard is the error of a file that does not decode.
func notBoard(data []byte, err error) error {
	return fmt.Errorf("not a blackboard file: %w", bigjson.Explain(data, err))
}

// checkTop checks what the file says beside its lists.
func (f *File) checkTop() error {
	if f.Format != Format {
		return fmt.Errorf("format %q, want %q", f.Format, Format)
	}
	if !f.hasRun {
		return errors.New(`no "run" object: not a saved run (runner writes "run" before the first step)`)
	}
	if f.JournalN < 0 {
		return fmt.Errorf("journal_n %d is negative", f.JournalN)
	}
	return nil
}

// boardOf is the board of a file decoded whole.
func boardOf(f *File) (*Board, error) {
	if err := f.checkTop(); err != nil {
		return nil, err
	}
	for i, e := range f.Entries {
		if e == nil {
			return nil, fmt.Errorf("entries[%d] is null", i)
		}
	}
	for i := range f.Steps {
		if f.Steps[i].get().Label == "" {
			return nil, fmt.Errorf("steps[%d] has no label", i)
		}
	}
	b := New(f.Run)
	keyed := 0
	for _, e := range f.Entries {
		if e.Key != "" {
			keyed++
		}
	}
	b.keys = make(map[string]*keyState, keyed)
	for _, e := range f.Entries {
		if e.Seq != int64(b.entries.len())+1 {
			return nil, fmt.Errorf("entry seq %d out of order (want %d)", e.Seq, b.entries.len()+1)
		}
		b.indexLocked(e.Entry)
	}
	for _, s := range f.Steps {
		if err := f.table.resolveStep(s.StepRecord, s.Refs); err != nil {
			return nil, err
		}
		b.steps.add(b.rowOf(s.StepRecord))
	}
	b.recordings = make([]Recording, len(f.Recordings))
	for i, r := range f.Recordings {
		if err := f.table.resolveRec(r.get(), r.Refs); err != nil {
			return nil, err
		}
		b.recordings[i] = *r.Recording
	}
	f.keep(b)
	return b, nil
}

// keep gives b what the file says beside its records: its journal's
// count and its blobs (for the journal's lines).
func (f *File) keep(b *Board) {
	b.journalN = f.JournalN
	b.loadBlobs = f.table
	b.blobsKnown = make(map[string]bool, len(f.table.lit))
	for k := range f.table.lit {
		b.blobsKnown[k] = true
	}
}

// Encode is the whole board as blackboard.json.
func (b *Board) Encode() ([]byte, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var buf bytes.Buffer
	w := bufio.NewWriterSize(&buf, 64<<10)
	if _, err := b.encodeLocked(w); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// foldJournal applies the journal's records that the file does not hold. A
// torn last line (the process was killed mid-write) is ignored.
func (b *Board) foldJournal(path string) error {
	if err := checkRegular(path); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(readlimit.NewReader(f, path, readlimit.Board), 1<<20)
	base, prev := b.journalN, int64(-1) // the file's watermark; the last record's number
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			b.torn = len(line) > 0
			return nil // an unterminated last line is a torn write: drop it
		}
		if err != nil {
			return err
		}
		var in recordIn
		if err := json.Unmarshal(line, &in); err != nil {
			if _, peekErr := r.Peek(1); peekErr == io.EOF {
				b.torn = true
				return nil
			}
			return fmt.Errorf("%s:%d: corrupt journal record: %w", path, lineNo, err)
		}
		rec, err := b.resolveRecord(&in)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, lineNo, err)
		}
		if err := b.checkNumber(&rec, prev, base); err != nil {
			return fmt.Errorf("%s:%d: %w", path, lineNo, err)
		}
		prev = rec.N
		if rec.N <= base {
			continue // the file holds it already (a crash between save and truncate)
		}
		b.journalN = rec.N
		switch {
		case rec.Entry != nil:
			if rec.Entry.Seq != int64(b.entries.len())+1 {
				return fmt.Errorf("%s:%d: entry seq %d out of order", path, lineNo, rec.Entry.Seq)
			}
			b.indexLocked(rec.Entry)
		case rec.Step != nil || len(rec.Entries) > 0:
			for _, e := range rec.Entries {
				if e.Seq != int64(b.entries.len())+1 {
					return fmt.Errorf("%s:%d: entry seq %d out of order", path, lineNo, e.Seq)
				}
				b.indexLocked(e)
			}
			if rec.Step != nil {
				b.steps.add(b.rowOf(rec.Step))
			}
		case rec.Rec != nil:
			b.recordings = append(b.recordings, *rec.Rec)
		case rec.Run != nil:
			src := b.run.PlanSource
			b.run = *rec.Run
			if rec.SameSource {
				b.run.PlanSource = src
			}
		}
	}
}

// Save writes the whole board to blackboard.json atomically and empties the
// journal. Its cost grows with the board: call it at the end of a run, not
// per step (per step, the journal is enough).
func (b *Board) Save() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.saveLocked()
}

func (b *Board) saveLocked() error {
	j := b.journal
	if j == nil {
		return errors.New("board: not backed by a file")
	}
	// Streamed to the file: a whole encoded copy of a board holding a
	// large value would double the peak.
	var known map[string]bool
	err := writeAtomic(j.file, FileMode, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 256<<10)
		var err error
		if known, err = b.encodeLocked(w); err != nil {
			return fmt.Errorf("board: encoding %s: %w", j.file, err)
		}
		return w.Flush()
	})
	if err != nil {
		return err
	}
	b.blobsKnown = known
	return j.truncate()
}

// encodeLocked writes the file with one step, entry or recording per line:
// readable and diffable, and much cheaper than indenting every value.
// Large strings are written once, in "blobs" (see store_blob.go), whose keys it
// returns.
func (b *Board) encodeLocked(w *bufio.Writer) (map[string]bool, error) {
	put := func(v any) error {
		data, err := json.Marshal(v)
		w.Write(data)
		return err
	}
	w.WriteString("{\n \"format\": ")
	put(Format)
	w.WriteString(",\n \"run\": ")
	if err := writeRun(w, &b.run); err != nil {
		return nil, err
	}
	x := newBlobSink(nil)
	x.texts = &b.texts
	var err error
	var scratch []byte
	// raw is a record's line as it was read, to be written again as it
	// is (see store_rawsave.go); nil: encode it.
	list := func(name string, n int, raw func(s []byte, x *blobSink, i int) ([]byte, error), enc func(b []byte, x *blobSink, i int) ([]byte, error)) {
		fmt.Fprintf(w, ",\n %q: [", name)
		for i := 0; i < n && err == nil; i++ {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString("\n  ")
			line, rerr := raw(scratch[:0], x, i)
			if rerr != nil {
				err = rerr
				break
			}
			if line != nil {
				scratch = line
				w.Write(line)
				continue
			}
			scratch, err = withBlobs(scratch[:0], x, func(s []byte, x *blobSink) ([]byte, error) { return enc(s, x, i) })
			w.Write(scratch)
		}
		if n > 0 {
			w.WriteString("\n ")
		}
		w.WriteByte(']')
	}
	none := func([]byte, *blobSink, int) ([]byte, error) { return nil, nil }
	list("steps", b.steps.len(), none, func(s []byte, x *blobSink, i int) ([]byte, error) {
		r := b.steps.record(i)
		return appendStep(s, &r, x)
	})
	list("entries", b.entries.len(), func(s []byte, x *blobSink, i int) ([]byte, error) { return b.entries.at(i).rawLine(s, x, int64(i)+1) },
		func(s []byte, x *blobSink, i int) ([]byte, error) {
			e := b.entries.at(i).entry(i)
			if e.lazy != nil { // rawLine writes these; never their content left out
				e = e.loaded()
			}
			return appendEntry(s, &e, x)
		})
	list("recordings", len(b.recordings), none, func(s []byte, x *blobSink, i int) ([]byte, error) {
		return appendRecording(s, &b.recordings[i], x)
	})
	if err != nil {
		return nil, err
	}
	x.slices(nil)
	if len(x.table) > 0 {
		w.WriteString(",\n \"blobs\": {")
		for i := range x.table {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString("\n  \"" + x.table[i].key + "\": ")
			if scratch, err = x.table[i].writeTo(w, scratch); err != nil {
				return nil, err
			}
		}
		w.WriteString("\n }")
	}
	fmt.Fprintf(w, ",\n \"journal_n\": %d\n}\n", b.journalN)
	return x.have, nil
}

// Path is the blackboard.json path, or "" for an in-memory board.
func (b *Board) Path() string {
	if b.journal == nil {
		return ""
	}
	return b.journal.file
}

// Close closes the journal (without saving).
func (b *Board) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.journal == nil {
		return nil
	}
	return b.journal.close()
}

// WriteFileAtomic replaces path with data: a temp file in the same
// directory, fsync, rename, fsync of the directory. Readers see the old file
// or the new one, never half of one.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeAtomic is WriteFileAtomic with the content written by write. The
// directory may be one a step writes: nothing planted at path is followed
// (package safefs).
func writeAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	return safefs.WriteFile(path, perm, write)
}
