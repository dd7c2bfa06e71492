package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var stepsKey = regexp.MustCompile(`(?m)^steps:`)

// Every plan the docs show is one runner accepts. A block that is a piece
// of a plan on purpose starts with "# fragment" and is skipped; a block
// without a top-level `steps:` is not a plan.
func TestPlansInDocsValidate(t *testing.T) {
	dir := t.TempDir()
	n := 0
	for _, p := range pages(t) {
		blocks, _ := split(p.text)
		for _, b := range blocks {
			if b.lang != "yaml" && b.lang != "yml" {
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(b.body), "# fragment") || !stepsKey.MatchString(b.body) {
				continue
			}
			n++
			file := filepath.Join(dir, "plan"+itoa(n)+".yaml")
			if err := os.WriteFile(file, []byte(b.body+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := run(t, dir, dir, "validate", file); r.code != 0 {
				t.Errorf("%s:%d: the plan shown does not validate (mark a deliberate piece with # fragment):\n%s", p.path, b.line, r.out)
			}
		}
	}
	if n == 0 {
		t.Fatal("found no plan in the docs; the block parser is broken")
	}
}
