package replay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// A large answer is compared by its digest: equal texts compare equal,
// different ones differ, and neither the normal form of a result nor of
// an entry holds a copy of the text.
func TestLongTextComparedByDigest(t *testing.T) {
	a := strings.Repeat("x", 1<<20)
	b := a[:len(a)-1] + "y"
	res := func(s string) json.RawMessage {
		data, _ := json.Marshal(map[string]any{"output": s, "duration_ms": 3})
		return data
	}
	ra, ra2, rb := normalResult(res(a), nil), normalResult(res(a), nil), normalResult(res(b), nil)
	if ra != ra2 || ra == rb {
		t.Fatalf("equal texts equal: %v, different texts differ: %v", ra == ra2, ra != rb)
	}
	if len(ra) > 1000 || !strings.Contains(ra, "[1048576 bytes, sha256:") {
		t.Fatalf("normal form of a result holding 1 MiB: %d bytes, %.120q", len(ra), ra)
	}
	ea, eb := normalEntry(board.Entry{Content: a}), normalEntry(board.Entry{Content: b})
	if ea == eb || len(ea) > 1000 {
		t.Fatalf("entries: differ %v, normal form %d bytes", ea != eb, len(ea))
	}
	if normalEntry(board.Entry{Content: "short"}) == normalEntry(board.Entry{Content: "other"}) {
		t.Fatal("short texts compared equal")
	}
}
