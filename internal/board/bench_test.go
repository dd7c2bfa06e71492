package board

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkLoad100k loads a saved run holding 100k entries.
func BenchmarkLoad100k(b *testing.B) {
	path := b.TempDir() + "/blackboard.json"
	bb, err := Create(path, Run{ID: "bench"}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("model output line. ", 10)
	for i := 0; i < 100_000; i++ {
		e := Entry{Section: "llm", Role: "assistant", Author: "coder", Label: fmt.Sprintf("step%d", i%50),
			Content: text, Meta: map[string]any{"visit": i % 7}}
		if i%10 == 0 {
			bb.Write(WriteOp{Key: fmt.Sprintf("k%d", i%1000), Value: i, TTL: time.Hour, ExpectVersion: -1})
			continue
		}
		bb.Append(e)
	}
	if err := bb.Save(); err != nil {
		b.Fatal(err)
	}
	bb.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := Load(path)
		if err != nil || l.Len() != 100_000 {
			b.Fatal(err, l.Len())
		}
	}
}

// BenchmarkAppend is the cost of one durable entry, journal write included.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []bool{false, true} {
		b.Run(fmt.Sprintf("fsync=%v", sync), func(b *testing.B) {
			bb, _ := Create(b.TempDir()+"/blackboard.json", Run{ID: "bench"}, Options{Sync: sync})
			defer bb.Close()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				bb.Append(Entry{Section: "s", Content: "hello"})
			}
		})
	}
}

// bigBoard writes a saved run of about mb megabytes: entries of about
// 1 KB of text and meta, a tenth of them writes to 10k keys, no journal.
func bigBoard(tb testing.TB, path string, mb int) {
	bb := New(Run{ID: "bench", Status: StatusSucceeded})
	text := strings.Repeat("model output line, with \"quotes\" and <tags>. ", 20)
	for i := 0; bb.Len() < mb*720; i++ {
		if i%10 == 0 {
			if _, err := bb.Write(WriteOp{Key: fmt.Sprintf("k%d", i%100_000), Value: map[string]any{"text": text, "n": i}, Author: "coder", ExpectVersion: -1}); err != nil {
				tb.Fatal(err)
			}
			continue
		}
		bb.Append(Entry{Section: "llm", Role: "assistant", Author: "coder", Label: fmt.Sprintf("step%d", i%50),
			Content: text, Meta: map[string]any{"visit": i % 7, "usage": map[string]any{"in": i, "out": 2 * i}}})
	}
	data, err := bb.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, FileMode); err != nil {
		tb.Fatal(err)
	}
}

// TestWriteBigBoard writes the board of docs/benchmarks.md "Reading a
// large board" where RUNNER_BIG_BOARD says (skipped without it).
func TestWriteBigBoard(t *testing.T) {
	path := os.Getenv("RUNNER_BIG_BOARD")
	if path == "" {
		t.Skip("RUNNER_BIG_BOARD=FILE writes a 100 MB board there")
	}
	bigBoard(t, path, 100)
}

// BenchmarkReadKey reads one key of a 20 MB saved run, as `runner board
// FILE get KEY` does: the whole load (LoadForRead: headers only) and
// the read (Load: every entry decoded, as before).
func BenchmarkReadKey(b *testing.B) {
	path := b.TempDir() + "/blackboard.json"
	bigBoard(b, path, 20)
	for _, tc := range []struct {
		name string
		load func(string) (*Board, error)
	}{{"LoadForRead", LoadForRead}, {"Load", Load}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				l, err := tc.load(path)
				if err != nil {
					b.Fatal(err)
				}
				if e, ok := l.Get("k10"); !ok || e.Content.(map[string]any)["text"] == "" {
					b.Fatal("k10 not read")
				}
			}
		})
	}
}
