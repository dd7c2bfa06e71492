package board

import (
	"bytes"
	"encoding/json"
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
