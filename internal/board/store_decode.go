package board

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/planrunner/runner/internal/bigjson"
)

// parseLines reads blackboard.json as runner writes it (l: one step
// record, entry or recording a line) into a board. The lines are decoded
// on every core at once (a 100k-entry board about twice as fast on two
// cores), each by the line decoder (store_linedecode.go), encoding/json
// taking the lines it does not, a batch at a time: the board takes each
// batch's records (its rows, store_steprow.go and entryrow.go) before the
// next is decoded. Decoded whole, the records of a 100k-step file (60 MB)
// were held beside the file and the rows made from them: the height of
// what a resume, a replay or a report held. A line neither decoder reads
// (a file laid out otherwise whose text happens to match the markers)
// has the file decoded whole, the plain way. Read in parts (store_text.go),
// a file that does not decode so is an error, and is read again whole.
func parseLines(t *text, l *layout, lazy *lineSource) (*Board, error) {
	f, err := decodeTop(t, l, nil)
	if err != nil {
		if !t.whole {
			return nil, err
		}
		return nil, notBoard(t.data, err)
	}
	if err := f.checkTop(); err != nil {
		return nil, err
	}
	b := New(f.Run)
	// Nothing the board keeps shares the file's bytes: read to resume, a
	// 100k-step run's file (72 MB) was held to its end for its entries'
	// lines (35 MB), left in the file now (store_lines.go), its blobs
	// copied.
	ds := make([]lineDec, min(runtime.GOMAXPROCS(0), 8))
	for w := range ds {
		ds[w] = lineDec{intern: map[string]string{}}
	}
	if lazy != nil {
		f.table.own()
		lazy.t = f.table
	}
	// A line the line decoders refuse: the file decoded whole says
	// whether it is fine or damaged, and then the line's error says where.
	whole := func(err error) (*Board, error) {
		if !t.whole {
			return nil, err
		}
		if f, werr := decodeWhole(t.data); werr == nil {
			return boardOf(f)
		}
		return nil, notBoard(t.data, err)
	}

	ns := len(l.at[0])
	recs := make([]StepRecord, min(ns, decodeBatch))
	refs := make([][]string, len(recs))
	if lazy != nil && lazy.f != nil && lazy.steps {
		b.steps.file = &fileSteps{lines: make([]lazyStep, ns), src: lazy, dec: lineDec{intern: map[string]string{}}}
	}
	for lo := 0; lo < ns; lo += len(recs) {
		n := min(len(recs), ns-lo)
		clear(recs[:n])
		t.lines(l, 0, lo, lo+n)
		err := inParallel(ds, n, func(d *lineDec, i int) error {
			at, end := l.lineAt(t, 0, lo+i)
			line := t.bytes(at, end)
			if fs := b.steps.file; fs != nil {
				if len(line) > math.MaxInt32 {
					return fmt.Errorf("step record %d: its line is over 2 GiB", lo+i+1)
				}
				fs.lines[lo+i] = lazyStep{at: int64(at), n: int32(len(line)), sum: lazy.sum(line)}
			}
			r, ok := d.step(line, &recs[i])
			if !ok {
				recs[i] = StepRecord{}
				in := stepIn{StepRecord: &recs[i]}
				if err := json.Unmarshal(line, &in); err != nil {
					return t.lineError(at, fmt.Sprintf("step record %d", lo+i+1), err)
				}
				r = in.Refs
			}
			refs[i] = r
			return nil
		})
		if err != nil {
			return whole(err)
		}
		for i := range n {
			if recs[i].Label == "" {
				return nil, fmt.Errorf("steps[%d] has no label", lo+i)
			}
			if err := f.table.resolveStep(&recs[i], refs[i]); err != nil {
				return nil, err
			}
			if b.steps.file == nil { // else read again from its line when asked for
				b.steps.add(b.rowOf(&recs[i]))
			}
		}
	}
	recs, refs = nil, nil

	ne := len(l.at[1])
	var lz []lazyEntry // where each entry's content is: kept with the board
	if lazy != nil {
		lz = make([]lazyEntry, ne)
		if ne > 0 && lazy.f == nil {
			t.lines(l, 1, 0, ne)
			lo, _ := l.lineAt(t, 1, 0)
			_, hi := l.lineAt(t, 1, ne-1)
			lines := t.bytes(lo, hi) // a part of its own, or the file's bytes
			if t.whole {
				lines = bytes.Clone(lines)
			}
			lazy.keep(lines, lo)
		}
	}
	if lazy != nil && lazy.f != nil && lazy.steps {
		b.entries.file = &fileEntries{lines: lz, dec: lineDec{intern: map[string]string{}}}
	}
	es := make([]Entry, min(ne, decodeBatch))
	ins := make([]entryIn, len(es))
	for lo := 0; lo < ne; lo += len(es) {
		n := min(len(es), ne-lo)
		clear(es[:n])
		clear(ins[:n])
		t.lines(l, 1, lo, lo+n)
		err := inParallel(ds, n, func(d *lineDec, i int) error {
			j := lo + i
			at, end := l.lineAt(t, 1, j)
			line := t.bytes(at, end)
			if lazy != nil {
				h, _, _, ok := d.entryLine(line)
				if !ok {
					h = entryHead{}
					if err := json.Unmarshal(line, &h); err != nil {
						return t.lineError(at, fmt.Sprintf("entry %d", j+1), err)
					}
				}
				if len(line) > math.MaxInt32 {
					return fmt.Errorf("entry %d: its line is over 2 GiB", j+1)
				}
				lz[j] = lazyEntry{at: int64(at), n: int32(len(line)), sum: lazy.sum(line), src: lazy}
				return h.entry(f.table, &es[i], &lz[j])
			}
			in := &ins[i]
			in.Entry = &es[i]
			if !d.entry(line, in) {
				*in.Entry = Entry{}
				if err := json.Unmarshal(line, in); err != nil {
					return t.lineError(at, fmt.Sprintf("entry %d", j+1), err)
				}
			}
			return f.table.resolveEntry(in.Entry, in.Refs)
		})
		if err != nil {
			return whole(err)
		}
		if lo == 0 {
			// The key index sized once (at 100k entries it grew 17
			// times), as the first batch's share of keyed entries says.
			keyed := 0
			for i := range n {
				if es[i].Key != "" {
					keyed++
				}
			}
			b.keys = make(map[string]*keyState, int(int64(keyed)*int64(ne)/int64(n))) // int64: no overflow on 32 bits
		}
		for i := range n {
			e := &es[i]
			if e.Seq != int64(b.entries.len())+1 {
				return nil, fmt.Errorf("entry seq %d out of order (want %d)", e.Seq, b.entries.len()+1)
			}
			b.indexLocked(e)
		}
	}
	es, ins = nil, nil

	nr := len(l.at[2])
	b.recordings = make([]Recording, nr)
	rrefs := make([][]string, nr)
	t.lines(l, 2, 0, nr)
	err = inParallel(ds, nr, func(d *lineDec, i int) error {
		at, end := l.lineAt(t, 2, i)
		line := t.bytes(at, end)
		r, ok := d.recording(line, &b.recordings[i])
		if !ok {
			b.recordings[i] = Recording{}
			in := recIn{Recording: &b.recordings[i]}
			if err := json.Unmarshal(line, &in); err != nil {
				return t.lineError(at, fmt.Sprintf("recording %d", i+1), err)
			}
			r = in.Refs
		}
		rrefs[i] = r
		return nil
	})
	if err != nil {
		return whole(err)
	}
	for i := range b.recordings {
		if err := f.table.resolveRec(&b.recordings[i], rrefs[i]); err != nil {
			return nil, err
		}
	}
	if t.err != nil {
		return nil, t.err
	}
	f.keep(b)
	return b, nil
}

// decodeBatch is how many records are decoded at once before the board
// takes them.
const decodeBatch = 4096

// inParallel calls each for 0..n-1 on every decoder at once, decoder w
// taking w, w+len(ds), ...; the error is the first decoder's to fail.
func inParallel(ds []lineDec, n int, each func(d *lineDec, i int) error) error {
	if n == 0 {
		return nil
	}
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for w := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += len(ds) {
				if err := each(&ds[w], i); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeTop decodes what is not a list of records: the format, the run,
// journal_n, and the blobs (checked). src non-nil: the run's plan source
// is left out of f.Run, *src set to its quoted bytes (runIn).
func decodeTop(t *text, l *layout, src *[]byte) (*File, error) {
	steps, entries, recs, blobs := l.list[0], l.list[1], l.list[2], l.list[3]
	// The run object is decoded apart too (runIn): encoding/json would
	// check its plan source's megabytes once more in the whole file.
	run := l.run
	rest := make([]byte, 0, 1024)
	pos := 0
	for _, c := range []span{run, steps, entries, recs, blobs} {
		if c == run && c.hi != 0 {
			rest = append(append(rest, t.bytes(pos, c.lo)...), "{}"...)
			pos = c.hi
			continue
		}
		if c.hi == 0 {
			continue
		}
		rest = append(rest, t.bytes(pos, c.lo-2)...) // up to the bracket
		if t.bytes(c.lo-2, c.lo-1)[0] == '{' {
			rest = append(rest, "{}"...)
		} else {
			rest = append(rest, "[]"...)
		}
		pos = c.hi + 3 // past "\n ]"
	}
	rest = append(rest, t.bytes(pos, t.size)...)
	var f File
	if err := unmarshalFile(rest, &f); err != nil {
		return nil, err
	}
	if run.hi != 0 {
		t.read(run.lo, run.hi)
		in := runIn{r: &f.Run, src: src}
		if err := in.UnmarshalJSON(t.bytes(run.lo, run.hi)); err != nil {
			return nil, t.lineError(run.lo, "run", err)
		}
	}
	// The blobs (large strings) are read in place, line by line: through
	// json.Unmarshal each would be copied once more.
	if blobs.hi != 0 {
		if f.Blobs == nil {
			f.Blobs = map[string]json.RawMessage{}
		}
		t.lines(l, 3, 0, len(l.at[3]))
		for i := range l.at[3] {
			line := l.line(t, 3, i)
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
	// run is the run object, on its line (` "run": {...},`); hi 0: not
	// found so.
	run span
}

// line is the i-th line of list k, trimmed of its indent and comma.
func (l *layout) line(t *text, k, i int) []byte {
	lo, hi := l.lineAt(t, k, i)
	return t.bytes(lo, hi)
}

// lineAt is where line(t, k, i) is in the file.
func (l *layout) lineAt(t *text, k, i int) (lo, hi int) {
	end := l.list[k].hi
	if i+1 < len(l.at[k]) {
		end = l.at[k][i+1] - 1
	}
	lo, hi = l.at[k][i], end
	b := t.bytes(lo, hi)
	for len(b) > 0 && isSpace(b[0]) {
		b, lo = b[1:], lo+1
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b, hi = b[:len(b)-1], hi-1
	}
	if len(b) > 0 && b[len(b)-1] == ',' {
		hi--
	}
	return lo, hi
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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
	s := layoutScan{cur: -1}
	for pos := 0; pos < len(data); {
		end, last := bytes.IndexByte(data[pos:], '\n'), false
		if end < 0 {
			end, last = len(data), true
		} else {
			end += pos
		}
		line := data[pos:end]
		s.line(pos, end, line[:min(len(line), headMax)], line[max(0, len(line)-2):], last)
		pos = end + 1
	}
	return s.done()
}

// lineErrorAt names a record that does not decode, whose line starts at
// lo in data (text.lineError).
func lineErrorAt(data []byte, lo int, what string, err error) error {
	return bigjson.ExplainAt(data, lo, what, err)
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
