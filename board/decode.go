package board

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// decodeFile reads blackboard.json. The file runner writes holds one entry
// per line; those lines are decoded on every core at once, which loads a
// 100k-entry board about twice as fast on two cores. A file in any other
// layout (reformatted by hand, say) is decoded whole, the plain way.
func decodeFile(data []byte, lazy bool) (*File, error) {
	start := bytes.Index(data, []byte("\n \"entries\": [\n"))
	var end int
	if start >= 0 {
		end = bytes.Index(data[start:], []byte("\n ],\n \"recordings\":"))
	}
	if start < 0 || end < 0 {
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
	end += start
	body := data[start+len("\n \"entries\": [\n") : end]
	after := data[end+len("\n ]"):]
	// The blobs (large strings) are read in place, line by line: through
	// json.Unmarshal each would be copied once more.
	var blobLines []byte
	if i := bytes.Index(after, []byte(",\n \"blobs\": {\n")); i >= 0 {
		if j := bytes.Index(after[i:], []byte("\n },\n \"journal_n\":")); j >= 0 {
			blobLines = after[i+len(",\n \"blobs\": {\n") : i+j]
			rest := make([]byte, 0, len(after)-len(blobLines))
			rest = append(rest, after[:i]...)
			after = append(rest, after[i+j+len("\n }"):]...)
		}
	}
	rest := make([]byte, 0, start+len(after)+32)
	rest = append(rest, data[:start]...)
	rest = append(rest, "\n \"entries\": []"...)
	rest = append(rest, after...)
	var f File
	if err := unmarshalFile(rest, &f); err != nil {
		return nil, err
	}
	if blobLines != nil {
		if f.Blobs == nil {
			f.Blobs = map[string]json.RawMessage{}
		}
		for i, line := range bytes.Split(blobLines, []byte("\n")) {
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
	lines := bytes.Split(body, []byte("\n"))
	f.Entries = make([]*entryIn, len(lines))
	workers := min(runtime.GOMAXPROCS(0), 8)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(lines); i += workers {
				line := bytes.TrimSuffix(bytes.TrimSpace(lines[i]), []byte(","))
				if lazy {
					var h entryHead
					if err := json.Unmarshal(line, &h); err != nil {
						errs[w] = fmt.Errorf("entry %d: %w", i+1, err)
						return
					}
					e, err := h.entry(line, f.table)
					if err != nil {
						errs[w] = err
						return
					}
					f.Entries[i] = &entryIn{Entry: e}
					continue
				}
				e := &entryIn{Entry: new(Entry)}
				if err := json.Unmarshal(line, e); err != nil {
					errs[w] = fmt.Errorf("entry %d: %w", i+1, err)
					return
				}
				if err := f.table.resolveEntry(e.Entry, e.Refs); err != nil {
					errs[w] = err
					return
				}
				f.Entries[i] = e
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &f, nil
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

// syntaxPos turns a JSON syntax error's byte offset into line:col.
func syntaxPos(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	off := min(int(se.Offset), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
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
}

func (ri *runIn) UnmarshalJSON(data []byte) error {
	ri.given = string(data) != "null"
	if !ri.given {
		return nil
	}
	return json.Unmarshal(data, ri.r)
}
