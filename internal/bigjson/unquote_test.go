package bigjson

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// Unquote reads what encoding/json reads, for every kind of escape and
// bad input, and a large text costs one allocation of its size.
func TestUnquoteSameAsEncodingJSON(t *testing.T) {
	big := strings.Repeat("line of text\n", Large/13+1)
	for _, lit := range []string{
		`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u2028\uD83D\uDE00"`,
		`"lone \ud800 high"`, `"lone \udc00 low"`, `"pair split \ud83d\u0041"`, `"\uD83D"`,
		"\"raw é 😀 \xff\xfe bad utf8 \xe2\x82\"", `"<>&"`,
		string(AppendString(nil, big)), string(AppendString(nil, big+"\x00\u2028\xff😀")),
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%.40q: %v", lit, err)
		}
		got, err := Unquote([]byte(lit))
		if err != nil || got != want {
			t.Errorf("Unquote(%.60q) = %.60q, %v; want %.60q", lit, got, err, want)
		}
	}
	for _, bad := range []string{``, `"`, `x`, `"a`, `"a"b"`, `"\x"`, `"\u12"`, `"\uzzzz"`, "\"a\nb\"", `"\"`} {
		if _, err := Unquote([]byte(bad)); err == nil {
			t.Errorf("Unquote(%q): no error", bad)
		}
	}
	text := strings.Repeat("answer\n", (8<<20)/7)
	lit := AppendString(nil, text)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := Unquote(lit)
	runtime.ReadMemStats(&after)
	if err != nil || got != text {
		t.Fatalf("Unquote of the 8 MiB text: %v", err)
	}
	if perByte := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(text)); perByte > 1.01 {
		t.Errorf("Unquote allocated %.2f bytes per byte of an 8 MiB text with newlines; want 1", perByte)
	}
	var viaJSON string
	runtime.GC()
	runtime.ReadMemStats(&before)
	json.Unmarshal(lit, &viaJSON)
	runtime.ReadMemStats(&after)
	t.Logf("encoding/json: %.2f bytes per byte", float64(after.TotalAlloc-before.TotalAlloc)/float64(len(text)))
}

// FuzzUnquote: whatever the literal, Unquote reads what encoding/json
// reads, or refuses what it refuses. Locally:
// go test ./internal/bigjson -run '^$' -fuzz FuzzUnquote -fuzztime 1m
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"plain text long enough for a word"`, `"abcdefg\"hij"`, `"abcdefgh\\ijkl\u00e9mnop"`,
		"\"0123456789\xff\xfeabcdefgh\"", "\"abcdefghi\x01j\"", `"\ud83d\ude00 and \ud800 alone"`, "\"é😀 mixed with ascii runs\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		if len(bytes.TrimSpace(lit)) != len(lit) {
			return // a literal is given without the space around it
		}
		var want string
		werr := json.Unmarshal(lit, &want)
		got, err := Unquote(lit)
		if werr == nil && (err != nil || got != want) {
			t.Fatalf("Unquote(%q) = %q, %v; want %q", lit, got, err, want)
		}
		if werr != nil && err == nil {
			t.Fatalf("Unquote(%q) = %q; encoding/json refuses: %v", lit, got, werr)
		}
	})
}
