package patch

import (
	"strings"
	"testing"
)

// stripBySplitting is strip as it was before its fast path: split on
// slashes, drop empty and "." components, join what is left.
func stripBySplitting(name string, n int) (string, bool) {
	var keep []string
	for _, p := range strings.Split(name, "/") {
		if p != "" && p != "." {
			keep = append(keep, p)
		}
	}
	if n >= len(keep) {
		return "", false
	}
	return strings.Join(keep[n:], "/"), true
}

// TestStripAsBefore checks that strip's fast path for plain names gives
// what splitting and joining gives, for plain names and for the ones it
// leaves to the slow path.
func TestStripAsBefore(t *testing.T) {
	names := []string{
		"x.go", "a/x.go", "b/src/pkg/x.go", "a/b/c/d/e",
		".x", "a/.x", "a/..b/x", "a./b", "a/.../b",
		".", "./x", "./a/x", "a/.", "a/./x", "a/././x",
		"/x", "/a/x", "a/", "a/x/", "a//x", "//a//x//", "/", "",
	}
	for _, name := range names {
		for n := 0; n <= 4; n++ {
			got, ok := strip(name, n)
			want, wok := stripBySplitting(name, n)
			if got != want || ok != wok {
				t.Errorf("strip(%q, %d) = %q, %v; want %q, %v", name, n, got, ok, want, wok)
			}
		}
	}
}

// TestStripPlainNameAllocatesNothing: the names of nearly every diff are
// plain ("a/src/x.go"), and stripping one is a slice of it.
func TestStripPlainNameAllocatesNothing(t *testing.T) {
	name := strings.Clone("a/src/pkg/file.go")
	allocs := testing.AllocsPerRun(100, func() {
		if s, ok := strip(name, 1); !ok || s != "src/pkg/file.go" {
			t.Fatalf("strip = %q, %v", s, ok)
		}
	})
	if allocs != 0 {
		t.Errorf("stripping a plain name allocates %v times, want 0", allocs)
	}
}
