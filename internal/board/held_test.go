package board

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// heapAfter is the heap in use, after collections, once f has run: what
// f left live. Two collections: encoding/json keeps its last buffer in a
// sync.Pool, emptied by the second.
func heapAfter(f func()) int64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	return int64(m1.HeapInuse) - int64(m0.HeapInuse)
}

// answerRecords are what a run puts on the board for one model answer:
// the recording (the answer as its provider gave it), the conversation
// entry, and the step's result and audit entry holding the answer
// trimmed (internal/steps/llm.go), a substring of it.
func answerRecords(text string) (Recording, Entry, StepRecord, Entry) {
	resp, _ := json.Marshal(map[string]any{"text": text, "model": "m", "usage": map[string]int{"output_tokens": 9}})
	out := strings.TrimSpace(text)
	result, _ := json.Marshal(map[string]any{"output": out, "calls": 1})
	return Recording{Label: "ask", Visit: 1, Kind: "llm", Call: 1, RequestSHA256: "x",
			Request: json.RawMessage(`{"messages":[]}`), Response: resp},
		Entry{Section: "llm", Role: "assistant", Label: "ask", Content: text},
		StepRecord{Label: "ask", Visit: 1, Status: "succeeded", Result: result},
		Entry{Section: "steps", Role: "step", Label: "ask", Content: out}
}

// TestLargeAnswerHeldOnce: a board holding a large answer with escapes
// (quotes, newlines, <, &: its JSON is 1.6 times the text) in a
// recording, an entry and a step result keeps the text once, not the
// step result's and the recording's JSON besides (3.9 times the text,
// live for as long as the board lives), and hands every record
// back as it was given, in memory and through the file.
func TestLargeAnswerHeldOnce(t *testing.T) {
	text := bigText(8 << 20)
	for _, file := range []bool{false, true} {
		name := map[bool]string{false: "memory", true: "file"}[file]
		t.Run(name, func(t *testing.T) {
			var b *Board
			path := t.TempDir() + "/blackboard.json"
			var wantResp, wantResult [32]byte
			grew := heapAfter(func() {
				// Made here, as the engine and the agents make them:
				// garbage once the board has them.
				rec, conv, step, audit := answerRecords(text)
				wantResp, wantResult = sha256.Sum256(rec.Response), sha256.Sum256(step.Result)
				if file {
					var err error
					if b, err = Create(path, Run{ID: "r", Status: StatusRunning}, Options{}); err != nil {
						t.Fatal(err)
					}
				} else {
					b = New(Run{ID: "r"})
				}
				// In the order agents.(*Session).record adds them.
				if _, err := b.Append(conv); err != nil {
					t.Fatal(err)
				}
				if err := b.AddRecording(rec); err != nil {
					t.Fatal(err)
				}
				if err := b.FinishStep(step, audit); err != nil {
					t.Fatal(err)
				}
			})
			perByte := float64(grew) / float64(len(text))
			t.Logf("board live: %.2f bytes per byte of the answer", perByte)
			if perByte > 0.25 {
				t.Errorf("the board keeps %.2f bytes per byte of an answer the test holds already: want at most 0.25 (the text shared, no JSON copies)", perByte)
			}
			check := func(b *Board) {
				t.Helper()
				r, _ := b.LastRecording()
				s, _ := b.LastStep()
				if sha256.Sum256(r.Response) != wantResp || sha256.Sum256(b.Recordings()[0].Response) != wantResp {
					t.Error("the recording's response did not come back as it was given")
				}
				if sha256.Sum256(s.Result) != wantResult || sha256.Sum256(b.Steps()[0].Result) != wantResult {
					t.Error("the step's result did not come back as it was given")
				}
			}
			check(b)
			if file {
				if err := b.Save(); err != nil {
					t.Fatal(err)
				}
				b.Close()
				loaded, err := Load(path)
				if err != nil {
					t.Fatal(err)
				}
				check(loaded)
			}
		})
	}
}

// TestHeldKeyLookalike: a record that holds, besides a large string, a
// string equal to that string's key is kept and handed back as it was
// given (the key is not taken for a reference), in memory and in the file.
func TestHeldKeyLookalike(t *testing.T) {
	text := bigText(BlobMin * 2)
	key := hashText(text)
	result, _ := json.Marshal(map[string]any{"output": text, "note": key})
	resp, _ := json.Marshal(map[string]any{"text": text})
	req, _ := json.Marshal(map[string]any{"quoted": key})
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.FinishStep(StepRecord{Label: "a", Visit: 1, Status: "succeeded", Result: result}, Entry{Section: "steps", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddRecording(Recording{Label: "a", Visit: 1, Kind: "llm", Request: req, Response: resp}); err != nil {
		t.Fatal(err)
	}
	check := func(b *Board, where string) {
		t.Helper()
		if got := b.Steps()[0].Result; !bytes.Equal(got, result) {
			t.Errorf("%s: result came back as %.200s", where, got)
		}
		r := b.Recordings()[0]
		if !bytes.Equal(r.Request, req) || !bytes.Equal(r.Response, resp) {
			t.Errorf("%s: recording came back as %.200s / %.200s", where, r.Request, r.Response)
		}
	}
	check(b, "memory")
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	loaded, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	check(loaded, "file")
}

// TestHeldTextMasked: a large output a step's maker held apart
// (Held.Key, as the engine does) is masked like any result: a secret in
// it never reaches the board's records or its file.
func TestHeldTextMasked(t *testing.T) {
	text := bigText(BlobMin*2) + " the token SECRET-123 here"
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.SetRedact(func(s string) string { return strings.ReplaceAll(s, "SECRET-123", "***") })
	h := new(Held)
	s := StepRecord{Label: "a", Visit: 1, Status: "succeeded", Result: json.RawMessage(`{"output":"` + h.Key(text) + `"}`)}
	s.Hold(h)
	if err := b.FinishStep(s, Entry{Section: "steps", Content: text}); err != nil {
		t.Fatal(err)
	}
	var r struct{ Output string }
	if err := json.Unmarshal(b.Steps()[0].Result, &r); err != nil || strings.Contains(r.Output, "SECRET") || !strings.HasSuffix(r.Output, "the token *** here") {
		t.Errorf("result not masked (err %v): ...%s", err, r.Output[max(0, len(r.Output)-40):])
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte("SECRET")) {
		t.Error("the file holds the secret")
	}
}

// TestInternLeavesTheCallersValue: writing an entry whose content is a
// map or a list holding a large text the board already holds shares the
// board's copy of the text without changing the caller's value. A step's
// output map is read by its siblings' templates while the step's entry
// is written: the board rewriting it in place was a data race (found by
// the cross-engine test under -race), and here changed what the caller
// held under it.
func TestInternLeavesTheCallersValue(t *testing.T) {
	text := bigText(BlobMin * 2)
	mine := strings.Clone(text) // the same text, other bytes
	for _, tc := range []struct {
		name    string
		content func() any
		get     func(any) string
	}{
		{"map", func() any { return map[string]any{"output": mine, "n": 1.0} },
			func(v any) string { return v.(map[string]any)["output"].(string) }},
		{"list", func() any { return []any{"a", mine} },
			func(v any) string { return v.([]any)[1].(string) }},
		{"nested", func() any { return map[string]any{"x": []any{map[string]any{"y": mine}}} },
			func(v any) string {
				return v.(map[string]any)["x"].([]any)[0].(map[string]any)["y"].(string)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Run{ID: "r"})
			if _, err := b.Append(Entry{Section: "llm", Content: text}); err != nil {
				t.Fatal(err)
			}
			content := tc.content()
			done := make(chan struct{})
			go func() { // a sibling step reading the output while it is written
				defer close(done)
				for range 50 {
					if _, err := json.Marshal(content); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			e, err := b.Append(Entry{Section: "steps", Content: content})
			<-done
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.get(content); unsafe.StringData(got) != unsafe.StringData(mine) {
				t.Errorf("the caller's %s now holds the board's copy of the text: it was changed in place", tc.name)
			}
			if got := tc.get(e.Content); got != text {
				t.Errorf("the entry's text differs from the one written")
			} else if unsafe.StringData(got) != unsafe.StringData(text) {
				t.Errorf("the entry holds a second copy of a text the board holds")
			}
		})
	}
}
