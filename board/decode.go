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
func decodeFile(data []byte) (*File, error) {
	start := bytes.Index(data, []byte("\n \"entries\": [\n"))
	var end int
	if start >= 0 {
		end = bytes.Index(data[start:], []byte("\n ],\n \"recordings\":"))
	}
	if start < 0 || end < 0 {
		var f File
		err := json.Unmarshal(data, &f)
		f.hasRun = err == nil && hasRun(data)
		return &f, err
	}
	end += start
	body := data[start+len("\n \"entries\": [\n") : end]
	rest := make([]byte, 0, len(data)-len(body))
	rest = append(rest, data[:start]...)
	rest = append(rest, "\n \"entries\": []"...)
	rest = append(rest, data[end+len("\n ]"):]...)
	var f File
	if err := json.Unmarshal(rest, &f); err != nil {
		return nil, err
	}
	f.hasRun = hasRun(rest)
	lines := bytes.Split(body, []byte("\n"))
	f.Entries = make([]*Entry, len(lines))
	workers := min(runtime.GOMAXPROCS(0), 8)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(lines); i += workers {
				line := bytes.TrimSuffix(bytes.TrimSpace(lines[i]), []byte(","))
				e := new(Entry)
				if err := json.Unmarshal(line, e); err != nil {
					errs[w] = fmt.Errorf("entry %d: %w", i+1, err)
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
	for i, s := range f.Steps {
		if s.Label == "" {
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

// hasRun reports whether a file's top-level object has a non-null "run".
func hasRun(data []byte) bool {
	var probe struct {
		Run json.RawMessage `json:"run"`
	}
	return json.Unmarshal(data, &probe) == nil && len(probe.Run) > 0 && string(probe.Run) != "null"
}
