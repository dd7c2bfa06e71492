package board

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/planrunner/runner/internal/bigjson"
)

// decodeFile reads blackboard.json. The file runner writes holds one step
// record, entry or recording per line; those lines are decoded on every core at
// once (a 100k-entry board about twice as fast on two cores), each by the
// line decoder (store_linedecode.go), encoding/json taking the lines it does
// not. A file in any other layout (reformatted by hand, say) is decoded
// whole, the plain way.
func decodeFile(data []byte, lazy bool) (*File, error) {
	l := scanLayout(data)
	if l.list[1].hi == 0 {
		return decodeWhole(data)
	}
	f, err := decodeTop(data, &l, nil)
	if err != nil {
		return nil, err
	}
	ns, ne, nr := len(l.at[0]), len(l.at[1]), len(l.at[2])
	if ns > 0 {
		// Room for the steps a resumed run adds: the first append would
		// copy them all (26 MB at 100k steps) to grow by as much.
		f.recs = make([]StepRecord, ns, ns+ns/4+8)
		f.Steps = make([]stepIn, ns)
	}
	f.Entries = make([]*entryIn, ne)
	if nr > 0 {
		// The recordings (model calls, clock readings: a replay's
		// input) in two blocks.
		f.Recordings = make([]recIn, nr)
		f.recs2 = make([]Recording, nr)
	}
	// The entries, in two or three allocations rather than two or three
	// per entry (they live as long as the board, all of them).
	var block struct {
		in      []entryIn
		entries []Entry
		lazy    []lazyEntry
	}
	block.in, block.entries = make([]entryIn, ne), make([]Entry, ne)
	if lazy {
		block.lazy = make([]lazyEntry, ne)
	}
	workers := min(runtime.GOMAXPROCS(0), 8)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := lineDec{alias: lazy, intern: map[string]string{}}
			for i := w; i < ns+ne+nr; i += workers {
				if i >= ns+ne {
					j := i - ns - ne
					line := l.line(data, 2, j)
					if err := f.recLine(&d, line, j); err != nil {
						errs[w] = lineError(data, line, fmt.Sprintf("recording %d", j+1), err)
						return
					}
					continue
				}
				if i < ns {
					line := l.line(data, 0, i)
					if err := f.stepLine(&d, line, i); err != nil {
						errs[w] = lineError(data, line, fmt.Sprintf("step record %d", i+1), err)
						return
					}
					continue
				}
				j := i - ns
				line := l.line(data, 1, j)
				if lazy {
					h, _, _, ok := d.entryLine(line)
					if !ok {
						h = entryHead{}
						if err := json.Unmarshal(line, &h); err != nil {
							errs[w] = lineError(data, line, fmt.Sprintf("entry %d", j+1), err)
							return
						}
					}
					in := &block.in[j]
					in.Entry = &block.entries[j]
					if err := h.entry(line, f.table, in.Entry, &block.lazy[j]); err != nil {
						errs[w] = err
						return
					}
					f.Entries[j] = in
					continue
				}
				e := &block.in[j]
				e.Entry = &block.entries[j]
				if !d.entry(line, e) {
					*e.Entry = Entry{}
					if err := json.Unmarshal(line, e); err != nil {
						errs[w] = lineError(data, line, fmt.Sprintf("entry %d", j+1), err)
						return
					}
				}
				if err := f.table.resolveEntry(e.Entry, e.Refs); err != nil {
					errs[w] = err
					return
				}
				f.Entries[j] = e
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			// Lines that are not records: a file laid out otherwise whose
			// text happens to match the markers. Decoded whole, it is
			// either fine or damaged, and then the line's error says where.
			if whole, werr := decodeWhole(data); werr == nil {
				return whole, nil
			}
			return nil, err
		}
	}
	return f, nil
}

// decodeTop decodes what is not a list of records: the format, the run,
// journal_n, and the blobs (checked). src non-nil: the run's plan source
// is left out of f.Run, *src set to its quoted bytes (runIn).
func decodeTop(data []byte, l *layout, src *[]byte) (*File, error) {
	steps, entries, recs, blobs := l.list[0], l.list[1], l.list[2], l.list[3]
	// The run object is decoded apart too (runIn): encoding/json would
	// check its plan source's megabytes once more in the whole file.
	var run span
	if l.run != nil {
		run.lo = int(uintptr(unsafe.Pointer(&l.run[0])) - uintptr(unsafe.Pointer(&data[0])))
		run.hi = run.lo + len(l.run)
	}
	rest := make([]byte, 0, 1024)
	pos := 0
	for _, c := range []span{run, steps, entries, recs, blobs} {
		if c == run && c.hi != 0 {
			rest = append(append(rest, data[pos:c.lo]...), "{}"...)
			pos = c.hi
			continue
		}
		if c.hi == 0 {
			continue
		}
		rest = append(rest, data[pos:c.lo-2]...) // up to the bracket
		if data[c.lo-2] == '{' {
			rest = append(rest, "{}"...)
		} else {
			rest = append(rest, "[]"...)
		}
		pos = c.hi + 3 // past "\n ]"
	}
	rest = append(rest, data[pos:]...)
	var f File
	if err := unmarshalFile(rest, &f); err != nil {
		return nil, err
	}
	if l.run != nil {
		in := runIn{r: &f.Run, src: src}
		if err := in.UnmarshalJSON(l.run); err != nil {
			return nil, lineError(data, l.run, "run", err)
		}
	}
	// The blobs (large strings) are read in place, line by line: through
	// json.Unmarshal each would be copied once more.
	if blobs.hi != 0 {
		if f.Blobs == nil {
			f.Blobs = map[string]json.RawMessage{}
		}
		for i := range l.at[3] {
			line := l.line(data, 3, i)
			k, v, ok := blobLine(line)
			if !ok {
				return nil, fmt.Errorf("blobs: line %d is not \"sha256:<hex>\": \"<text>\"", i+1)
			}
			f.Blobs[k] = v
		}
	}
	var err error
	if f.table, err = blobsOf(f.Blobs); err != nil {
		return nil, err
	}
	return &f, nil
}

// stepLine decodes the i-th step record's line into f.recs[i].
func (f *File) stepLine(d *lineDec, line []byte, i int) error {
	s := &f.recs[i]
	refs, ok := d.step(line, s)
	if !ok {
		*s = StepRecord{}
		in := stepIn{StepRecord: s}
		if err := json.Unmarshal(line, &in); err != nil {
			return err
		}
		refs = in.Refs
	}
	f.Steps[i] = stepIn{StepRecord: s, Refs: refs}
	return nil
}

// recLine decodes the i-th recording's line into f.recs2[i].
func (f *File) recLine(d *lineDec, line []byte, i int) error {
	r := &f.recs2[i]
	refs, ok := d.recording(line, r)
	if !ok {
		*r = Recording{}
		in := recIn{Recording: r}
		if err := json.Unmarshal(line, &in); err != nil {
			return err
		}
		refs = in.Refs
	}
	f.Recordings[i] = recIn{Recording: r, Refs: refs}
	return nil
}

// decodeWhole decodes a file of any layout with encoding/json.
func decodeWhole(data []byte) (*File, error) {
	var f File
	err := unmarshalFile(data, &f)
	if err != nil {
		return &f, err
	}
	if f.table, err = blobsOf(f.Blobs); err != nil {
		return nil, err
	}
	for _, e := range f.Entries {
		if e == nil {
			continue // check says so
		}
		if err := f.table.resolveEntry(e.get(), e.Refs); err != nil {
			return nil, err
		}
	}
	return &f, nil
}

// span is a list's lines in the file: data[lo:hi], after its opening
// bracket's line ("[\n" ends at lo) and before its closing one ("\n ]"
// starts at hi); hi 0: not found.
type span struct{ lo, hi int }

// layout is where the lists runner writes one record a line are: the
// step records, the entries, the recordings and the blobs, with their
// lines (trimmed of indent and comma).
type layout struct {
	list [4]span
	at   [4][]int // where each line starts (a slice of each: 24 MB at 100k steps)
	// run is the run object, on its line (` "run": {...},`); nil: not
	// found so.
	run []byte
}

// line is the i-th line of list k, trimmed of its indent and comma.
func (l *layout) line(data []byte, k, i int) []byte {
	end := l.list[k].hi
	if i+1 < len(l.at[k]) {
		end = l.at[k][i+1] - 1
	}
	return bytes.TrimSuffix(bytes.TrimSpace(data[l.at[k][i]:end]), []byte(","))
}

// scanLayout finds, in one pass over the file's lines, the lists as
// runner writes them:
//
//	"steps": [
//	 {...},
//	 {...}
//	],
//
// (steps, entries, recordings; the blobs an object, ` "blobs": {` to
// ` }`), in that order, each once. A list found otherwise is not one (left to encoding/json).
func scanLayout(data []byte) layout {
	var l layout
	names := [4]string{` "steps": [`, ` "entries": [`, ` "recordings": [`, ` "blobs": {`}
	cur, next := -1, 0
	for pos := 0; pos < len(data); {
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += pos
		}
		line := data[pos:end]
		switch {
		case cur >= 0 && len(line) >= 2 && line[0] == ' ' && line[1] != ' ':
			// The list's closing line (" ]," or " }," ...): a list's
			// records are indented by two.
			if c := line[1]; c == ']' && cur < 3 || c == '}' && cur == 3 {
				l.list[cur].hi = pos - 1
			} else {
				l.list[cur], l.at[cur] = span{}, nil
			}
			cur = -1
		case cur >= 0:
			l.at[cur] = append(l.at[cur], pos)
		case l.run == nil && next == 0 && bytes.HasPrefix(line, []byte(` "run": {`)) && bytes.HasSuffix(line, []byte("},")):
			l.run = line[len(` "run": `) : len(line)-1]
		case len(line) > 2 && line[0] == ' ' && line[1] == '"':
			for k := next; k < 4; k++ {
				if string(line) == names[k] && end < len(data) {
					cur, next = k, k+1
					l.list[k].lo = end + 1
					break
				}
			}
		}
		pos = end + 1
	}
	if cur >= 0 { // never closed
		l.list[cur], l.at[cur] = span{}, nil
	}
	return l
}

// lineError names a record that does not decode, and where it is in the
// file: a syntax error's offset is the line's, not the file's.
func lineError(data, line []byte, what string, err error) error {
	off := 0
	if len(line) > 0 {
		off = int(uintptr(unsafe.Pointer(&line[0])) - uintptr(unsafe.Pointer(&data[0])))
	}
	return bigjson.ExplainAt(data, off, what, err)
}

// blobLine splits a line of the blobs table as runner writes it:
// `  "sha256:<hex>": "<text>",`.
func blobLine(line []byte) (string, []byte, bool) {
	line = bytes.TrimSuffix(bytes.TrimSpace(line), []byte(","))
	if len(line) < 2 || line[0] != '"' {
		return "", nil, false
	}
	i := bytes.IndexByte(line[1:], '"')
	if i < 0 {
		return "", nil, false
	}
	key := string(line[1 : 1+i])
	v := bytes.TrimSpace(line[2+i:])
	if len(v) == 0 || v[0] != ':' {
		return "", nil, false
	}
	return key, bytes.TrimSpace(v[1:]), true
}

// blobsOf checks a file's blobs: each a JSON string whose text hashes to
// its key.
func blobsOf(blobs map[string]json.RawMessage) (*blobTable, error) {
	t := newBlobTable()
	for k, v := range blobs {
		if err := t.put(k, v); err != nil {
			return nil, err
		}
	}
	if err := t.link(); err != nil {
		return nil, err
	}
	return t, nil
}

// check reports what makes a decoded file unusable as a saved run, in
// words that say what is wrong: a file without its run, a negative
// journal_n, a null where an entry or a step should be.
func (f *File) check() error {
	if !f.hasRun {
		return errors.New(`no "run" object: not a saved run (runner writes "run" before the first step)`)
	}
	if f.JournalN < 0 {
		return fmt.Errorf("journal_n %d is negative", f.JournalN)
	}
	for i, e := range f.Entries {
		if e == nil {
			return fmt.Errorf("entries[%d] is null", i)
		}
	}
	for i := range f.Steps {
		if f.Steps[i].get().Label == "" {
			return fmt.Errorf("steps[%d] has no label", i)
		}
	}
	return nil
}

// unmarshalFile decodes a file's top-level object into f, noting in
// f.hasRun whether its "run" is there and not null, in the same pass (a
// second pass to tell cost a resume of a 100k-step run 3% of its CPU).
func unmarshalFile(data []byte, f *File) error {
	in := fileIn{File: f, Run: runIn{r: &f.Run}}
	err := json.Unmarshal(data, &in)
	f.hasRun = in.Run.given
	return err
}

// fileIn is File with its "run" decoded by runIn (the shallower field
// wins over File's own).
type fileIn struct {
	*File
	Run runIn `json:"run"`
}

// runIn decodes the run object into r and says whether there was one.
type runIn struct {
	r     *Run
	given bool
	// src non-nil: the plan source is not unquoted; *src is its quoted
	// bytes (LoadLive: a get or list shows no plan).
	src *[]byte
}

func (ri *runIn) UnmarshalJSON(data []byte) error {
	ri.given = string(data) != "null"
	if !ri.given {
		return nil
	}
	// The plan's source (10 MB at 100k steps) is unquoted apart, in one
	// allocation: through encoding/json it was checked, scanned and
	// copied twice more (3% of a 100k resume).
	if st, en, ok := planSource(data); ok && ri.src != nil {
		lean := make([]byte, 0, len(data)-(en-st)+2)
		lean = append(append(append(lean, data[:st]...), `""`...), data[en:]...)
		*ri.src = data[st:en]
		return json.Unmarshal(lean, ri.r)
	} else if ok {
		if src, err := bigjson.Unquote(data[st:en]); err == nil {
			lean := make([]byte, 0, len(data)-(en-st)+2)
			lean = append(append(append(lean, data[:st]...), `""`...), data[en:]...)
			if err := json.Unmarshal(lean, ri.r); err != nil {
				return err
			}
			ri.r.PlanSource = src
			return nil
		}
	}
	return json.Unmarshal(data, ri.r)
}

// planSource finds the run object's "plan_source" string, by the line
// decoder's rules (a key given once, spelled so; the object valid).
func planSource(data []byte) (st, en int, ok bool) {
	d := lineDec{b: data}
	found := false
	ok = d.fields([]string{"plan_source"}, func(int) bool {
		if d.next() != '"' {
			return false
		}
		st = d.i
		_, _, found = d.rawString()
		en = d.i
		return found
	})
	return st, en, ok && found
}
