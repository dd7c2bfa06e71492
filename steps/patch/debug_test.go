package patch

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestDumpCase(t *testing.T) {
	spec := os.Getenv("PATCH_CASE")
	if spec == "" {
		t.Skip()
	}
	name, idx, _ := strings.Cut(spec, ":")
	ci, _ := strconv.Atoi(idx)
	cases := buildCorpus(t, 300)
	for vi, v := range variants {
		rng := randFor(vi)
		for i := range cases {
			tr := v.make(rng, &cases[i])
			if v.name != name || i != ci {
				continue
			}
			out := "/tmp/dump"
			os.RemoveAll(out)
			writeTree(t, filepath.Join(out, "tree"), tr.tree)
			writeTree(t, filepath.Join(out, "want"), tr.want)
			os.WriteFile(filepath.Join(out, "p.diff"), tr.diff, 0o644)
		}
	}
}
