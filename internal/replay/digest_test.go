package replay

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A replay compares long strings (a model's answer) by their digest:
// digestLong must say the same of equal strings and differ on unequal
// ones, without copying them (io.WriteString on the hash would copy
// each 50 MiB answer, several times per replay).
func TestDigestLongNoCopy(t *testing.T) {
	big := strings.Repeat("x", 8<<20)
	other := big[:len(big)-1] + "y"
	v := map[string]any{"output": big, "list": []any{other, "short"}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := digestLong(v).(map[string]any)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 256<<10 {
		t.Errorf("digesting two 8 MiB strings allocated %d bytes; want no copy of them", n)
	}
	want := fmt.Sprintf("[%d bytes, sha256:%x]", len(big), sha256.Sum256([]byte(big)))
	if got["output"] != want {
		t.Errorf("output = %v; want %s", got["output"], want)
	}
	list := got["list"].([]any)
	if list[0] == want || list[1] != "short" {
		t.Errorf("list = %v; want the changed string with another digest, the short one as it is", list)
	}
}
