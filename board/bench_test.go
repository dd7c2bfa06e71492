package board

import (
	"fmt"
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
