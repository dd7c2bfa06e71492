package board

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The run object is written as json.Marshal writes it, its plan source
// (up to 10 MB at 100k steps) quoted piece by piece: escapes, HTML
// characters, U+2028, invalid UTF-8 and multi-byte characters across the
// pieces' edges come out the same.
func TestRunWrittenAsMarshalled(t *testing.T) {
	long := strings.Repeat("steps: é ✓ 😀 <a&b> \"q\" \\ \t\n\u2028 \xff\xe2\x82 ", 5000)
	for _, src := range []string{"", "x", `"plan_source":""`, long, long[:len(long)-1], "\xe2" + long} {
		run := Run{ID: `id "plan_source":""`, PlanPath: "p<>.yaml", PlanSource: src, Vars: map[string]any{"a": "b"}, Status: StatusFailed}
		want, err := json.Marshal(&run)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if err := writeRun(w, &run); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("source of %d bytes: written differently from json.Marshal", len(src))
		}
	}
}
