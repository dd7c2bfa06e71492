package board

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// Hand-written lines: the line decoder gives what encoding/json gives,
// or hands the line to it (wantFast says the decoder takes it itself).
var lineCases = []struct {
	name     string
	line     string
	wantFast bool
}{
	{"as runner writes", `{"id":"01A","seq":1,"section":"steps","role":"step","author":"runner","label":"s0","key":"","version":0,"content":"hi me 0","meta":{"status":"succeeded","visit":1},"ts":"2026-11-26T10:29:43.469505154Z","ttl_s":null}`, true},
	{"reordered, spaces", ` { "ts" : "2026-11-26T10:29:43Z" , "label":"b", "seq" : 2 ,"id":"x", "meta" : null , "content" : [1, {"a" : "b"}] , "version": 3 , "key":"k" } `, true},
	{"escapes", `{"id":"\u0041\"q\"","seq":3,"label":"\ud83d\ude00 smile","key":"a\\b\/c\n","author":"\u00e9t\u00e9","content":"x"}`, true},
	{"bad surrogate escape", `{"id":"\ud800","seq":3,"label":"\udc00\ud800x"}`, true},
	{"invalid UTF-8", "{\"id\":\"a\xff\xfeb\",\"seq\":4,\"content\":\"\xc3\"}", true},
	{"non-ASCII plain", `{"id":"ünï","seq":4,"label":"日本語"}`, true},
	{"unknown fields", `{"id":"u","seq":5,"zz_new":{"a":[1,2.5e3,{"b":null,"c":true}]},"other":"x","content":false,"deleted":true,"topic":"t"}`, true},
	{"ttl and refs", `{"id":"t","seq":6,"ttl_s":3600.5,"blob_refs":["sha256:aa","sha256:bb"],"deleted":false}`, true},
	{"empty refs", `{"id":"t","seq":6,"ttl_s":-0,"blob_refs":[]}`, true},
	{"key in another case", `{"ID":"c","Seq":7,"LABEL":"l"}`, false},
	{"key with a fold", "{\"id\":\"c\",\"ſeq\":7}", false},
	{"escaped key", `{"\u0069d":"c","seq":7}`, false},
	{"duplicate field", `{"id":"a","seq":1,"id":"b"}`, false},
	{"float seq", `{"id":"a","seq":1.0}`, false},
	{"exponent seq", `{"id":"a","seq":1e2}`, false},
	{"null string", `{"id":null,"seq":1}`, false},
	{"huge ttl", `{"id":"a","seq":1,"ttl_s":1e999}`, false},
	{"seq past int64", `{"id":"a","seq":99999999999999999999}`, false},
	{"meta a list", `{"id":"a","seq":1,"meta":[1]}`, false},
	{"truncated", `{"id":"a","seq":1,"content":{"x":`, false},
	{"trailing garbage", `{"id":"a","seq":1} x`, false},
	{"trailing comma", `{"id":"a","seq":1,}`, false},
	{"control char", "{\"id\":\"a\tb\",\"seq\":1}", false},
	{"bad escape", `{"id":"a\qb","seq":1}`, false},
	{"bad number in content", `{"id":"a","seq":1,"content":01}`, false},
	{"time with offset", `{"id":"a","seq":1,"ts":"2026-01-02T03:04:05.5+02:00"}`, true},
	{"bad time", `{"id":"a","seq":1,"ts":"yesterday"}`, false},
	{"long strings, stops at each offset", `{"id":"0123456789abcdef0123456789\"bcdef","seq":8,"label":"lab\\el with a backslash at 3 and é at 19","author":"abcdefghijklmno\u00e9pqrstuvwxyz","content":"` + strings.Repeat(`0123456\"`, 5) + `"}`, true},
	{"long invalid UTF-8", "{\"id\":\"abcdefghijklmnopq\xffrstuvwxyz\",\"seq\":8}", true},
	{"long string, control char at 9", "{\"id\":\"abcdefghi\x01jklmnopq\",\"seq\":8}", false},
	{"time, leap day of a leap year", `{"id":"a","seq":1,"ts":"2024-02-29T23:59:59.999999999Z"}`, true},
	{"time, leap day of another year", `{"id":"a","seq":1,"ts":"2025-02-29T00:00:00Z"}`, false},
	{"time, leap second", `{"id":"a","seq":1,"ts":"2026-12-31T23:59:60Z"}`, false},
	{"time, ten fraction digits", `{"id":"a","seq":1,"ts":"2026-01-01T00:00:00.1234567891Z"}`, true},
	{"time, lower-case z", `{"id":"a","seq":1,"ts":"2026-01-01T00:00:00.5z"}`, false},
	{"time, hour 24", `{"id":"a","seq":1,"ts":"2026-01-01T24:00:00Z"}`, false},
	{"step, times of both forms", `{"label":"g","started_at":"2026-01-01T00:00:00.000000001Z","finished_at":"2026-01-01T01:00:00.5+01:00"}`, true},
	{"meta and content of every kind", `{"id":"a","seq":1,"content":{"l":[1,-0,2.5e-3,"s",true,false,null,[],{}],"n":{"m":{"o":1E2}}},"meta":{"visit":1,"status":"ok","nested":{"a":[{"b":null}]},"empty":{},"list":[]}}`, true},
	{"meta with a key given twice", `{"id":"a","seq":1,"meta":{"visit":1,"visit":{"x":2}},"content":{"k":"a","k":[1]}}`, true},
	{"meta with escapes and non-ASCII", `{"id":"a","seq":1,"meta":{"\u0076isit":"\"é\"","日本":"語"},"content":["a\nb","\ud800"]}`, true},
	{"meta with invalid UTF-8", "{\"id\":\"a\",\"seq\":1,\"meta\":{\"k\xff\":\"v\xfe\"},\"content\":[\"\xc3\"]}", true},
	{"meta with a number past float64", `{"id":"a","seq":1,"meta":{"n":1e400}}`, false},
	{"content a number past float64", `{"id":"a","seq":1,"content":[1,-1e999]}`, false},
	{"content a bare number", `{"id":"a","seq":1,"content":12345678901234567890}`, true},
	{"null", `null`, false},
	{"not an object", `[1,2]`, false},
	{"step as runner writes", `{"label":"s0","visit":1,"type":"board","status":"succeeded","started_at":"2026-11-26T10:29:43.469228868Z","finished_at":"2026-11-26T10:29:43.469505154Z","duration_ms":0,"attempts":1,"result":{"output":"hi me 0","key":"k0","version":1,"found":true},"error":"","inputs":{"key":"k0","value":"hi me 0"}}`, true},
	{"step, every field", `{"label":"g","visit":2,"type":"parallel","parent":"p","status":"failed","goto":"end","result":null,"error":"boom \"x\"","retry_delays_ms":[10,20],"inputs":{},"blob_refs":null,"duration_ms":-5}`, true},
	{"step, empty lists", `{"label":"g","visit":2,"retry_delays_ms":[],"inputs":{"a":"\u00e9"}}`, true},
	{"step, float visit", `{"label":"g","visit":2.5}`, false},
	{"step, null inputs value", `{"label":"g","inputs":{"a":null}}`, false},
	{"recording as runner writes", `{"label":"ask","visit":1,"kind":"llm","call":2,"agent":"coder","request_sha256":"ab12","request":{"messages":[{"role":"user","content":"hi \"x\""}]},"response":{"text":"é","tokens":3}}`, true},
	{"recording, reordered, refs, null request", ` { "response" : "sha256:aa" , "blob_refs" : ["sha256:aa"], "request": null, "kind":"clock","label":"s","visit":3 } `, true},
	{"recording, no response", `{"label":"s","visit":1,"kind":"read","request_sha256":""}`, true},
	{"recording, float call", `{"label":"s","visit":1,"kind":"llm","call":1.5,"response":1}`, false},
	{"recording, truncated response", `{"label":"s","visit":1,"kind":"llm","response":{"a":`, false},
}

// TestLineDecoderAsJSON: each line decodes, by the line decoder and by
// encoding/json, to the same entry, entry header and step record.
func TestLineDecoderAsJSON(t *testing.T) {
	for _, tc := range lineCases {
		t.Run(tc.name, func(t *testing.T) {
			entry, step, rec := checkLine(t, []byte(tc.line))
			fast := entry
			switch {
			case strings.HasPrefix(tc.name, "step"):
				fast = step
			case strings.HasPrefix(tc.name, "recording"):
				fast = rec
			}
			if fast != tc.wantFast {
				t.Errorf("taken by the line decoder: %v, want %v", fast, tc.wantFast)
			}
		})
	}
}

// checkLine compares the two decodings of line as an entry (lazy and
// whole, with and without sharing its bytes), as a step record and as
// a recording, and reports whether the line decoder took it as each.
func checkLine(t *testing.T, line []byte) (entry, step, rec bool) {
	t.Helper()
	for _, alias := range []bool{false, true} {
		d := lineDec{alias: alias, intern: map[string]string{}}
		want := entryIn{Entry: new(Entry)}
		werr := json.Unmarshal(line, &want)
		got := entryIn{Entry: new(Entry)}
		if ok := d.entry(line, &got); ok {
			entry = true
			if werr != nil {
				t.Fatalf("entry: the line decoder took a line encoding/json refuses (%v): %+v", werr, got.Entry)
			}
			if !reflect.DeepEqual(got.Entry, want.Entry) || !reflect.DeepEqual(got.Refs, want.Refs) {
				t.Fatalf("entry:\nline decoder %#v %q\nencoding/json %#v %q", got.Entry, got.Refs, want.Entry, want.Refs)
			}
		}
		var wh entryHead
		herr := json.Unmarshal(line, &wh)
		if gh, _, _, ok := d.entryLine(line); ok {
			if herr != nil {
				t.Fatalf("header: the line decoder took a line encoding/json refuses (%v)", herr)
			}
			if !reflect.DeepEqual(gh, wh) {
				t.Fatalf("header:\nline decoder %#v\nencoding/json %#v", gh, wh)
			}
		}
		var gs StepRecord
		ws := stepIn{StepRecord: new(StepRecord)}
		serr := json.Unmarshal(line, &ws)
		if refs, ok := d.step(line, &gs); ok {
			step = true
			if serr != nil {
				t.Fatalf("step: the line decoder took a line encoding/json refuses (%v)", serr)
			}
			if len(gs.Result) == 0 && len(ws.Result) == 0 {
				gs.Result, ws.Result = nil, nil
			}
			if !reflect.DeepEqual(gs, *ws.StepRecord) || !reflect.DeepEqual(refs, ws.Refs) {
				t.Fatalf("step:\nline decoder %#v %q\nencoding/json %#v %q", gs, refs, *ws.StepRecord, ws.Refs)
			}
		}
		var gr Recording
		wr := recIn{Recording: new(Recording)}
		rerr := json.Unmarshal(line, &wr)
		if refs, ok := d.recording(line, &gr); ok {
			rec = true
			if rerr != nil {
				t.Fatalf("recording: the line decoder took a line encoding/json refuses (%v)", rerr)
			}
			if !reflect.DeepEqual(gr, *wr.Recording) || !reflect.DeepEqual(refs, wr.Refs) {
				t.Fatalf("recording:\nline decoder %#v %q\nencoding/json %#v %q", gr, refs, *wr.Recording, wr.Refs)
			}
		}
	}
	return entry, step, rec
}

// FuzzLineDecoder: whatever the line, the line decoder does not panic,
// and a line it takes decodes as encoding/json decodes it. CI runs the
// seeds; locally: go test ./board -run '^$' -fuzz FuzzLineDecoder -fuzztime 1m
func FuzzLineDecoder(f *testing.F) {
	for _, tc := range lineCases {
		f.Add([]byte(tc.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkLine(t, line) })
}

// Variants of a saved file, as a person or another tool may have written
// it: each loads (Load, LoadForRead, LoadToResume) to the board the file
// as runner wrote it loads to, record by record.
func TestLoadLayouts(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning, PlanSource: "steps:\n  - {label: \"x\", text: é😀\\}\n",
		Vars: map[string]any{"who": "me", "plan_source": "not this one"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	b.SetClock(func() time.Time { return clock })
	writeBig(t, b, bigText(20<<10))
	for i := 0; i < 6; i++ {
		if _, err := b.Write(WriteOp{Key: fmt.Sprintf("k%d", i%3), Value: map[string]any{"n": float64(i), "s": "é😀\"<x>\"\n"},
			Author: "a😀", Meta: map[string]any{"why": i}, TTL: time.Duration(i) * time.Hour, ExpectVersion: -1}); err != nil {
			t.Fatal(err)
		}
		res, _ := json.Marshal(map[string]any{"output": fmt.Sprint("out ", i), "list": []any{1, "two", nil}})
		if err := b.FinishStep(StepRecord{Label: fmt.Sprintf("s%d", i), Visit: 1 + i%2, Type: "shell", Parent: "grp", Status: "succeeded",
			StartedAt: clock, FinishedAt: clock.Add(time.Second), DurationMS: 1000, Attempts: 2, Delays: []int64{5},
			Inputs: map[string]string{"cmd": "echo \"ünï\""}, Host: fmt.Sprint("höst", i%2), Result: res, Error: "e\u2028"},
			Entry{Section: "steps", Role: "step", Label: fmt.Sprintf("s%d", i), Content: "done", Meta: map[string]any{"visit": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Write(WriteOp{Key: "k0", Delete: true, ExpectVersion: -1}); err != nil {
		t.Fatal(err)
	}
	for i, r := range []Recording{
		{Label: "s1", Visit: 2, Kind: "llm", Call: 3, Agent: "a😀", RequestSHA256: "ff", Request: json.RawMessage(`{"m":["é\"q\""]}`), Response: json.RawMessage(`{"text":"ok","n":1.5}`)},
		{Label: "s2", Visit: 1, Kind: "clock", Response: json.RawMessage(`"2026-01-02T03:04:05Z"`)},
	} {
		if err := b.AddRecording(r); err != nil {
			t.Fatal(i, err)
		}
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	orig, _ := os.ReadFile(path)
	want, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if src := want.Run().PlanSource; !strings.HasPrefix(src, "steps:\n") {
		t.Fatalf("plan source %q", src)
	}
	for _, s := range want.Steps()[1:] { // after writeBig's
		if wantHost := fmt.Sprint("höst", (s.Label[1]-'0')%2); s.Host != wantHost || len(s.Inputs) != 1 {
			t.Fatalf("step %s as loaded: host %q, inputs %v; want %s and one input", s.Label, s.Host, s.Inputs, wantHost)
		}
	}
	indent := func(prefix string) func([]byte) []byte {
		return func(data []byte) []byte {
			var out bytes.Buffer
			if err := json.Indent(&out, data, "", prefix); err != nil {
				t.Fatal(err)
			}
			return out.Bytes()
		}
	}
	variants := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"as written", func(d []byte) []byte { return d }},
		{"pretty-printed, one space", indent(" ")},
		{"pretty-printed, tabs", indent("\t")},
		{"fields reordered, spaced, escaped, unknown ones added", func(d []byte) []byte { return eachRecord(t, d, shuffleLine) }},
		{"the run's plan source spelled in another case", func(d []byte) []byte {
			return bytes.Replace(d, []byte(`"plan_source":`), []byte(`"Plan_Source":`), 1)
		}},
		{"the run's plan source escaped", func(d []byte) []byte {
			return bytes.Replace(d, []byte(`"plan_source":"steps`), []byte(`"plan_source":"\u0073teps`), 1)
		}},
		{"keys in another case", func(d []byte) []byte {
			return eachRecord(t, d, func(line []byte) []byte {
				return bytes.Replace(bytes.Replace(line, []byte(`"label":`), []byte(`"Label":`), 1), []byte(`"seq":`), []byte(`"SEQ":`), 1)
			})
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			data := v.edit(append([]byte(nil), orig...))
			p := t.TempDir() + "/blackboard.json"
			os.WriteFile(p, data, 0o600)
			for _, load := range []struct {
				name string
				f    func(string) (*Board, error)
			}{{"Load", Load}, {"LoadForRead", LoadForRead}, {"LoadToResume", LoadToResume}, {"LoadLean", LoadLean}} {
				got, err := load.f(p)
				if err != nil {
					t.Fatalf("%s: %v\n%.2000s", load.name, err, data)
				}
				sameBoard(t, load.name, got, want)
			}
		})
	}
}

// sameBoard compares two boards record by record.
func sameBoard(t *testing.T, how string, got, want *Board) {
	t.Helper()
	if !reflect.DeepEqual(got.Run(), want.Run()) {
		t.Errorf("%s: run\n got %+v\nwant %+v", how, got.Run(), want.Run())
	}
	gs, ws := got.Steps(), want.Steps()
	if len(gs) != len(ws) || got.entries.len() != want.entries.len() {
		t.Fatalf("%s: %d steps, %d entries; want %d, %d", how, len(gs), got.entries.len(), len(ws), want.entries.len())
	}
	for i := range gs {
		g, w := gs[i].whole(), ws[i].whole()
		// A result's JSON is kept as the file spells it (pretty-printed
		// or not): the same value, compacted.
		var gr, wr bytes.Buffer
		json.Compact(&gr, g.Result)
		json.Compact(&wr, w.Result)
		g.Result, w.Result = gr.Bytes(), wr.Bytes()
		if !reflect.DeepEqual(g, w) {
			g.Result, w.Result = nil, nil
			t.Errorf("%s: step %d:\n got %+v %.200s\nwant %+v %.200s", how, i, g, gr.Bytes(), w, wr.Bytes())
		}
	}
	gr, wr := got.Recordings(), want.Recordings()
	if len(gr) != len(wr) {
		t.Fatalf("%s: %d recordings, want %d", how, len(gr), len(wr))
	}
	for i := range gr {
		// Request and response are kept as the file spells them
		// (spaced, escaped or not): the same values, decoded.
		g, w := gr[i], wr[i]
		var vals [4]any
		for k, raw := range []*json.RawMessage{&g.Request, &w.Request, &g.Response, &w.Response} {
			if len(*raw) > 0 {
				json.Unmarshal(*raw, &vals[k])
			}
			*raw = nil
		}
		if !reflect.DeepEqual(g, w) || !reflect.DeepEqual(vals[0], vals[1]) || !reflect.DeepEqual(vals[2], vals[3]) {
			t.Errorf("%s: recording %d:\n got %+v %.200v %.200v\nwant %+v %.200v %.200v", how, i, g, vals[0], vals[2], w, vals[1], vals[3])
		}
	}
	for i := range got.entries.len() {
		g, w := got.entries.at(i).loaded(i), want.entries.at(i).loaded(i)
		g.lazy, w.lazy = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: entry %d:\n got %.500v\nwant %.500v", how, i, g, w)
		}
	}
}

// eachRecord rewrites each step record, entry and recording line of a
// saved file.
func eachRecord(t *testing.T, data []byte, edit func([]byte) []byte) []byte {
	out := bytes.Split(data, []byte("\n"))
	in := false
	for i, line := range out {
		switch string(line) {
		case ` "steps": [`, ` "entries": [`, ` "recordings": [`:
			in = true
			continue
		case ` ],`, ` ]`:
			in = false
		}
		if !in || !bytes.HasPrefix(line, []byte("  {")) {
			continue
		}
		comma := bytes.HasSuffix(line, []byte(","))
		line = edit(bytes.TrimSuffix(bytes.TrimSpace(line), []byte(",")))
		out[i] = append([]byte("  "), line...)
		if comma {
			out[i] = append(out[i], ',')
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// shuffleLine writes a record's fields in reverse order, spaced, its
// plain string values (not times) escaped as \u sequences (surrogate
// pairs past the BMP), with fields no runner writes added.
func shuffleLine(line []byte) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		panic(err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	var b bytes.Buffer
	b.WriteString("{ \"zz_future\" : {\"a\":[1,{\"b\":null}],\"c\":\"\\\"\"} ,")
	for _, k := range keys {
		v := m[k]
		var s string
		isTime := strings.HasSuffix(k, "_at") || k == "ts"
		if !isTime && v[0] == '"' && json.Unmarshal(v, &s) == nil && !strings.HasPrefix(s, "sha256:") {
			v = escapeAll(s)
		}
		fmt.Fprintf(&b, "\n \"%s\" :\t%s ,", k, v)
	}
	b.WriteString(` "another": 1.5e-3 }`)
	return bytes.ReplaceAll(b.Bytes(), []byte("\n"), nil) // one line still
}

func escapeAll(s string) []byte {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04X`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	b.WriteByte('"')
	return b.Bytes()
}

// A record's line that does not decode is named, with its line and
// column in the file (a syntax error's offset was the line's, and was
// reported as if it were the file's: line 1).
func TestDamagedRecordLineNamed(t *testing.T) {
	path := t.TempDir() + "/blackboard.json"
	b, err := Create(path, Run{ID: "r", Status: StatusRunning}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, b, 2)
	fill(t, b, 1)
	for i := 0; i < 2; i++ {
		if err := b.AddRecording(Recording{Label: "rec", Visit: i + 1, Kind: "llm", Response: json.RawMessage(`{"text":"t"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Save(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	orig, _ := os.ReadFile(path)
	lines := strings.Split(string(orig), "\n")
	find := func(prefix string, nth int) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				if nth--; nth == 0 {
					return i
				}
			}
		}
		t.Fatalf("no %q in\n%s", prefix, orig)
		return 0
	}
	tests := []struct {
		name string
		at   int
		edit func(string) string
		want string
	}{
		{"truncated entry", find(`  {"id":`, 2), func(l string) string { return l[:30] }, "column 31: entry 2: unexpected end"},
		{"garbage in an entry", find(`  {"id":`, 3), func(l string) string { return strings.Replace(l, `"seq":`, `"seq":x`, 1) }, "entry 3: invalid character 'x'"},
		{"entry of the wrong type", find(`  {"id":`, 1), func(l string) string { return strings.Replace(l, `"seq":1`, `"seq":"1"`, 1) }, `: entry 1: "seq" holds text, want a whole number`},
		{"run of the wrong type", find(` "run": `, 1), func(l string) string { return strings.Replace(l, `"id":"r"`, `"id":5`, 1) }, `: run: "id" holds a number, want text`},
		{"garbage in the run", find(` "run": `, 1), func(l string) string { return strings.Replace(l, `"id":"r"`, `"id":"r"x`, 1) }, "invalid character 'x'"},
		{"truncated step record", find(`  {"label":`, 2), func(l string) string { return l[:20] }, "step record 2: "},
		{"truncated recording", find(`  {"label":"rec"`, 2), func(l string) string { return l[:25] }, "recording 2: "},
		{"garbage in a recording", find(`  {"label":"rec"`, 1), func(l string) string { return strings.Replace(l, `"visit":`, `"visit":}`, 1) }, "recording 1: invalid character '}'"},
		{"recording of the wrong type", find(`  {"label":"rec"`, 1), func(l string) string { return strings.Replace(l, `"visit":1`, `"visit":"1"`, 1) }, `recording 1: "visit" holds text, want a whole number`},
		{"garbage in a step record", find(`  {"label":`, 1), func(l string) string { return strings.Replace(l, `"visit":`, `"visit":]`, 1) }, "step record 1: invalid character ']'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			damaged := append([]string(nil), lines...)
			damaged[tc.at] = tc.edit(damaged[tc.at])
			p := t.TempDir() + "/blackboard.json"
			os.WriteFile(p, []byte(strings.Join(damaged, "\n")), 0o600)
			where := fmt.Sprintf("%s: not a blackboard file: line %d", p, tc.at+1)
			for _, load := range []func(string) (*Board, error){Load, LoadForRead, LoadToResume} {
				_, err := load(p)
				if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v\nwant it to name %q and say %q", err, where, tc.want)
				}
			}
		})
	}
}
