package readlimit

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileStopsAtTheLimit(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	big := filepath.Join(dir, "big")
	os.WriteFile(small, []byte("12345"), 0o600)
	os.WriteFile(big, []byte("123456"), 0o600)
	if got, err := File(small, 5); err != nil || string(got) != "12345" {
		t.Fatalf("at the limit: %q, %v", got, err)
	}
	for _, p := range []string{big, "/dev/zero"} {
		_, err := File(p, 5)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p+" is larger than 5 bytes") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := All(strings.NewReader("123456"), "standard input", 5); err == nil || !strings.Contains(err.Error(), "standard input is larger than 5 bytes") {
		t.Errorf("All: %v", err)
	}
}

func TestEnvVarOverridesTheLimit(t *testing.T) {
	t.Setenv(EnvVar, "0.5")
	if got := Limit(Board); got != 1<<19 {
		t.Fatalf("Limit = %d", got)
	}
	for _, bad := range []string{"-1", "0", "x", "1e30"} {
		t.Setenv(EnvVar, bad)
		if got := Limit(Plan); got != Plan {
			t.Errorf("%s=%s: Limit = %d, want the default", EnvVar, bad, got)
		}
	}
}

// A stream read record by record is bounded per record: many small
// records pass, one large one does not.
func TestReaderBoundsEachRecord(t *testing.T) {
	in := strings.Repeat(`{"v": "0123456789"}`+"\n", 1000) + `{"v": "` + strings.Repeat("x", 100) + `"}` + "\n"
	lr := NewReader(strings.NewReader(in), "stdin", 64)
	dec := json.NewDecoder(lr)
	n := 0
	for {
		var v map[string]string
		err := dec.Decode(&v)
		lr.Mark(dec.InputOffset())
		if err == io.EOF {
			t.Fatal("the large record passed")
		}
		if err != nil {
			if !errors.Is(err, ErrTooLarge) || n != 1000 {
				t.Fatalf("after %d records: %v", n, err)
			}
			return
		}
		n++
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{300: "300 bytes", 1536: "1.5 KiB", 16 << 20: "16 MiB", 1 << 30: "1 GiB", 64<<20 + 1<<19: "64.5 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
