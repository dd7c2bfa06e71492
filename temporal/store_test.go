package temporal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStorePutGet(t *testing.T) {
	s := DirStore{Dir: filepath.Join(t.TempDir(), "not", "yet")} // made on the first Put
	for _, data := range [][]byte{[]byte("a board chunk"), {}, []byte(strings.Repeat("x", 1<<20))} {
		name, err := s.Put(data)
		if err != nil {
			t.Fatal(err)
		}
		if name != Sum(data) {
			t.Errorf("name %s, want the sha256 %s", name, Sum(data))
		}
		if again, err := s.Put(data); err != nil || again != name {
			t.Errorf("second Put: %s, %v", again, err)
		}
		got, err := s.Get(name)
		if err != nil || string(got) != string(data) {
			t.Errorf("Get %s: %d bytes, %v; want %d bytes", name, len(got), err, len(data))
		}
		fi, err := os.Stat(s.path(name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("blob mode %v, want 0644 (other users' workers read it)", fi.Mode().Perm())
		}
	}
	// No temp file is left behind.
	leftovers, _ := filepath.Glob(filepath.Join(s.Dir, "*", ".blob-*"))
	if len(leftovers) > 0 {
		t.Errorf("temp files left: %v", leftovers)
	}
}

func TestStoreGetErrors(t *testing.T) {
	s := DirStore{Dir: t.TempDir()}
	name, err := s.Put([]byte("original"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path(name), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, want string }{
		{name, "is damaged"},
		{Sum([]byte("never stored")), "is not in the store"},
		{"abc", "not a sha256 name"},
	} {
		if _, err := s.Get(c.name); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Get(%.8s…): %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// The workflow writes a chunk per step that touches the world (a new
// blob each time): go test -run '^$' -bench StorePut ./
func BenchmarkStorePut(b *testing.B) {
	s := DirStore{Dir: b.TempDir()}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		data := fmt.Appendf(nil, `{"steps":[{"label":"s1","visit":%d,"type":"command","status":"succeeded","result":{"output":"1\n"}}]}`, i)
		if _, err := s.Put(data); err != nil {
			b.Fatal(err)
		}
	}
}
