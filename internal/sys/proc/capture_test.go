package proc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef"},
		{"exactly full", 6, []string{"abc", "def"}, "abcdef"},
		{"one write too many", 6, []string{"abcdefg"}, "abc\n[... 1 bytes dropped ...]\nefg"},
		{"many small writes", 4, []string{"a", "b", "c", "d", "e", "f", "g"}, "ab\n[... 3 bytes dropped ...]\nfg"},
		{"ring wraps", 6, []string{"abcd", "ef", "gh", "ijk"}, "abc\n[... 5 bytes dropped ...]\nijk"},
		{"large write replaces the tail", 6, []string{"ab", "cdefghijklmnop"}, "abc\n[... 10 bytes dropped ...]\nnop"},
		{"rune split at the head's end", 4, []string{"aé", "xxxxé"}, "a\n[... 6 bytes dropped ...]\né"},
		{"rune split at the tail's start", 6, []string{"abcxxx", "éé"}, "abc\n[... 5 bytes dropped ...]\né"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapture(tt.limit, nil)
			for _, w := range tt.writes {
				c.Write([]byte(w))
			}
			got := c.output()
			if got.Text != tt.want {
				t.Errorf("text %q, want %q", got.Text, tt.want)
			}
			if total := len(strings.Join(tt.writes, "")); got.Bytes != int64(total) {
				t.Errorf("bytes %d, want %d", got.Bytes, total)
			}
			if !utf8.ValidString(got.Text) {
				t.Errorf("text is not valid UTF-8: %q", got.Text)
			}
		})
	}
}

// TestCaptureMatchesReference writes random chunks and compares with the
// head and tail of the whole stream.
func TestCaptureMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		limit := 1 + r.IntN(64)
		c := newCapture(limit, nil)
		var all []byte
		for range r.IntN(20) {
			chunk := make([]byte, r.IntN(3*limit))
			for j := range chunk {
				chunk[j] = byte('a' + r.IntN(26))
			}
			all = append(all, chunk...)
			c.Write(chunk)
		}
		want := string(all)
		if len(all) > limit {
			h := limit / 2
			tl := limit - h
			want = fmt.Sprintf("%s\n[... %d bytes dropped ...]\n%s", all[:h], len(all)-limit, all[len(all)-tl:])
		}
		if got := c.output().Text; got != want {
			t.Fatalf("case %d (limit %d, %d bytes): got %q, want %q", i, limit, len(all), got, want)
		}
	}
}

const bigOutput = 200 << 20

// TestLargeOutputBoundedMemory runs a process printing 200 MB and checks
// that the bytes allocated while reading it stay a small multiple of the cap.
func TestLargeOutputBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("200 MB of output")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := Run(context.Background(), Spec{Script: fmt.Sprintf("yes 0123456789abcdef | head -c %d", bigOutput)})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("200 MB of output: %.1f MiB allocated in total, heap in use %.1f MiB, kept %d bytes, took %v",
		float64(alloc)/(1<<20), float64(after.HeapInuse)/(1<<20), len(r.Stdout.Text), r.Duration)
	if r.Stdout.Bytes != bigOutput || r.Stdout.Dropped != bigOutput-DefaultMaxOutput {
		t.Errorf("bytes %d dropped %d", r.Stdout.Bytes, r.Stdout.Dropped)
	}
	if alloc > 16<<20 {
		t.Errorf("allocated %d bytes for a 200 MB output; want under 16 MiB", alloc)
	}
}

func BenchmarkLargeOutput(b *testing.B) {
	b.SetBytes(bigOutput)
	for b.Loop() {
		if _, err := Run(context.Background(), Spec{Script: fmt.Sprintf("head -c %d /dev/zero", bigOutput)}); err != nil {
			b.Fatal(err)
		}
	}
}
