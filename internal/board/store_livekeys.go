package board

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/planrunner/runner/internal/bigjson"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

// `runner board FILE get KEY` and `list` show live keys only: each key's
// newest entry. A run's file is mostly what they never show (of the
// 100k-step run's 75 MB, the plan's source is 10 MB and the step
// records most of the rest), and building every entry, step record and
// the plan source to show one key cost 6.8 times the file in memory.
// LoadLive reads the entries' headers to find each key's newest entry
// and builds those only; the step records, the recordings and the plan
// source's text are not kept (Run reads the source from the file again,
// for the agents' key patterns, which apply to --agent only).

// LoadLive reads a saved run for its live keys: a board holding each
// key's newest entry only, with the file's keys, versions and times, for
// Get, GetAt, ReadAs, Keys and KeysAt, which answer as on the board Load
// reads. Everything else (entries without a key or overwritten, step
// records, recordings, Len, Query) is not there: LoadForRead is the board
// for those. It is for reading only. A file with a journal to fold in, or
// laid out otherwise than runner writes it, is read by LoadForRead (its
// errors are then LoadForRead's too).
func LoadLive(path string) (*Board, error) {
	if fi, err := os.Lstat(JournalPath(path)); !errors.Is(err, os.ErrNotExist) && (err != nil || fi.Size() > 0) {
		return LoadForRead(path)
	}
	data, cut, err := readLive(path)
	if err != nil {
		return nil, err
	}
	if b, ok := parseLive(data); ok {
		if cut.hi > cut.lo {
			b.planSrc, b.planAt = nil, planAt{path: path, lo: cut.lo - 1, hi: cut.hi + 1}
		}
		return b, nil
	}
	return LoadForRead(path) // the whole file, to say what is wrong with it
}

// readLive reads the file at path without the lines of its step records
// and recordings (runner writes them one a line, in lists opened by
// ` "steps": [` and ` "recordings": [` and closed by a line indented by
// one space), and without the text of the plan source (its quotes kept),
// which a read of live keys does not use: of the 100k-step run's 75 MB,
// 40 MB. The file is read twice, in pieces: the first pass sizes the
// buffer kept (grown as it filled, it would leave copies of itself
// behind) and finds the plan source; cut is where its text is in the
// file (hi 0: nothing cut).
func readLive(path string) (data []byte, cut span, err error) {
	if err := checkRegular(path); err != nil {
		return nil, cut, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, cut, err
	}
	defer f.Close()
	n, err := keptLines(readlimit.NewReader(f, path, readlimit.Board), nil, &cut)
	if err != nil {
		return nil, cut, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, cut, err
	}
	data = make([]byte, 0, n)
	_, err = keptLines(readlimit.NewReader(f, path, readlimit.Board), &data, &cut)
	return data, cut, err
}

// keptLines passes over r's lines, appending to *out (when out is not
// nil) those that are not in the lists of step records and recordings,
// less the bytes in *cut, and says how many bytes that is. Without out,
// it finds the plan source's text in the run's line and sets *cut to it.
func keptLines(r io.Reader, out *[]byte, cut *span) (int, error) {
	const runHead = ` "run": `
	br := bufio.NewReaderSize(r, 256<<10)
	n, skip, keep, start := 0, false, true, true
	pos, runSeen := 0, false // the file offset of seg; the run's line met
	var run []byte           // the run's line, while it is read (without out)
	for {
		seg, err := br.ReadSlice('\n') // a line, or a piece of a long one
		if len(seg) > 0 {
			if start { // the line's beginning decides for all of it
				line := bytes.TrimSuffix(seg, []byte("\n"))
				switch {
				case skip && len(line) >= 2 && line[0] == ' ' && line[1] != ' ': // the list's end
					skip, keep = false, true
				case skip:
					keep = false
				default:
					keep = true
					skip = string(line) == ` "steps": [` || string(line) == ` "recordings": [`
					if out == nil && !runSeen && bytes.HasPrefix(line, []byte(runHead+"{")) {
						runSeen, run = true, []byte{}
					}
				}
			}
			lo, hi := pos, pos+len(seg)
			if keep {
				n += len(seg)
				if out != nil {
					if cut.hi > cut.lo && lo < cut.hi && hi > cut.lo {
						*out = append(*out, seg[:max(cut.lo, lo)-lo]...)
						*out = append(*out, seg[min(cut.hi, hi)-lo:]...)
					} else {
						*out = append(*out, seg...)
					}
				}
			}
			if run != nil {
				run = append(run, seg...)
			}
			start = seg[len(seg)-1] == '\n'
			if start && run != nil {
				line := bytes.TrimSuffix(bytes.TrimSuffix(run, []byte("\n")), []byte(","))
				if st, en, ok := planSource(line[len(runHead):]); ok && en-st > 2 {
					base := hi - len(run) + len(runHead)
					*cut = span{lo: base + st + 1, hi: base + en - 1}
				}
				run = nil
			}
			pos = hi
		}
		switch err {
		case nil, bufio.ErrBufferFull:
		case io.EOF:
			if out == nil {
				n -= cut.hi - cut.lo
			}
			return n, nil
		default:
			return n, err
		}
	}
}

// parseLive builds the board of data's live keys; false: the file is not
// as runner writes it (or a line does not decode by the line decoder),
// and the whole read is the one to say what is wrong.
func parseLive(data []byte) (*Board, bool) {
	l := scanLayout(data)
	if l.list[1].hi == 0 || l.run.hi == 0 {
		return nil, false
	}
	var src []byte
	t := wholeText(data)
	f, err := decodeTop(t, &l, &src)
	if err != nil || f.checkTop() != nil {
		return nil, false
	}
	// Each key's newest entry: its line's index. The keys share the
	// file's bytes (d.alias), as the entries built from them do.
	d := lineDec{alias: true}
	latest := map[string]int32{}
	for j := range l.at[1] {
		line := l.line(t, 1, j)
		h, _, _, ok := d.entryLine(line)
		if !ok || h.Seq != int64(j)+1 {
			return nil, false
		}
		if len(h.Refs) > 0 {
			if _, err := f.table.check(fmt.Sprintf("entry seq %d (id %s)", h.Seq, h.ID), h.Refs); err != nil {
				return nil, false
			}
		}
		if h.Key != "" {
			latest[h.Key] = int32(j)
		}
	}
	at := make([]int32, 0, len(latest))
	for _, j := range latest {
		at = append(at, j)
	}
	slices.Sort(at) // indexed in the file's order, as Load indexes them
	b := New(f.Run)
	b.keys = make(map[string]*keyState, len(at))
	entries, lazy := make([]Entry, len(at)), make([]lazyEntry, len(at))
	lines := &lineSource{mem: data, t: f.table} // shared, as the keys are
	for i, j := range at {
		lo, hi := l.lineAt(t, 1, int(j))
		h, _, _, _ := d.entryLine(data[lo:hi]) // it decoded above
		if hi-lo > math.MaxInt32 {
			return nil, false
		}
		lazy[i] = lazyEntry{at: int64(lo), n: int32(hi - lo), src: lines}
		if err := h.entry(f.table, &entries[i], &lazy[i]); err != nil {
			return nil, false
		}
		b.indexLocked(&entries[i])
	}
	b.journalN = f.JournalN
	b.planSrc = src
	b.readOnly = true
	return b, true
}

// planAt is where the run's plan source is in the file (LoadLive), with
// its quotes: read again when Run is called.
type planAt struct {
	path   string
	lo, hi int
}

// read is the plan source, "" when it cannot be read.
func (p planAt) read() string {
	f, err := os.Open(p.path)
	if err != nil {
		return ""
	}
	defer f.Close()
	quoted := make([]byte, p.hi-p.lo)
	if _, err := f.ReadAt(quoted, int64(p.lo)); err != nil {
		return ""
	}
	return planSourceOf(quoted)
}

// planSourceOf is the run's plan source, unquoted from the file's bytes
// (LoadLive); "" when it does not unquote (it was not checked on load:
// a plan that does not read has no key patterns to apply either).
func planSourceOf(quoted []byte) string {
	if s, err := bigjson.Unquote(quoted); err == nil {
		return s
	}
	var s string // as runIn does: what Unquote does not take
	json.Unmarshal(quoted, &s)
	return s
}
