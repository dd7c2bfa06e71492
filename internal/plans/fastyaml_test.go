package plans

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/planrunner/runner/internal/testutil/planfuzz"
)

// yamlV3 is the first document of src as yaml.v3 reads it, and whether
// it is the only one (the only sources the fast reader may accept).
func yamlV3(src []byte) (doc *yaml.Node, err error, single bool) {
	var d yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	err = dec.Decode(&d)
	if err != nil {
		return nil, err, false
	}
	var more yaml.Node
	return &d, nil, dec.Decode(&more) == io.EOF
}

// sameTree names the first node where got differs from want, "" if none.
func sameTree(got, want *yaml.Node) string {
	if got == nil || want == nil {
		if got != want {
			return fmt.Sprintf("node %v, want %v", got, want)
		}
		return ""
	}
	at := fmt.Sprintf("node at %d:%d (want %d:%d, %q)", got.Line, got.Column, want.Line, want.Column, want.Value)
	switch {
	case got.Kind != want.Kind:
		return fmt.Sprintf("%s: kind %v, want %v", at, got.Kind, want.Kind)
	case got.Style != want.Style:
		return fmt.Sprintf("%s: style %v, want %v", at, got.Style, want.Style)
	case got.Tag != want.Tag:
		return fmt.Sprintf("%s: tag %q, want %q", at, got.Tag, want.Tag)
	case got.Value != want.Value:
		return fmt.Sprintf("%s: value %q, want %q", at, got.Value, want.Value)
	case got.Anchor != want.Anchor:
		return fmt.Sprintf("%s: anchor %q, want %q", at, got.Anchor, want.Anchor)
	case got.Line != want.Line || got.Column != want.Column:
		return fmt.Sprintf("%s: position differs", at)
	case (got.Alias == nil) != (want.Alias == nil):
		return fmt.Sprintf("%s: alias differs", at)
	case len(got.Content) != len(want.Content):
		return fmt.Sprintf("%s: %d children, want %d", at, len(got.Content), len(want.Content))
	}
	for i := range got.Content {
		if d := sameTree(got.Content[i], want.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

// checkFast fails t if the fast reader accepts src and its tree is not
// yaml.v3's, or accepts a source yaml.v3 rejects or reads as more than
// one document. It reports whether the fast reader accepted src.
func checkFast(t testing.TB, name string, src []byte) bool {
	t.Helper()
	got, ok := fastYAML(string(src))
	if !ok {
		return false
	}
	want, err, single := yamlV3(src)
	if err != nil {
		t.Errorf("%s: the fast reader accepts a source yaml.v3 rejects (%v)", name, err)
		return true
	}
	if !single {
		t.Errorf("%s: the fast reader accepts a source of more than one document", name)
		return true
	}
	if d := sameTree(got, want); d != "" {
		t.Errorf("%s: %s", name, d)
	}
	return true
}

// fastYAMLCases are hand-written sources; fast is whether the fast reader
// must accept it (false: it may fall back).
var fastYAMLCases = []struct {
	name string
	src  string
	fast bool
}{
	{"plan", "version: 1\nname: big\nsteps:\n  - label: a\n    type: command\n    run: echo hi\n", true},
	{"flow steps", "steps:\n  - {label: s0, type: board, op: write, key: 'k0', value: 'hi ${{ vars.who }} 0'}\n  - {when: 'a && b', goto: fail}\n", true},
	{"indentless", "steps:\n- a\n- b\nnext: 1\n", true},
	{"empty values", "a:\nb: \nc:\n  - \n  -\n  - x\nd:\n", true},
	{"empty at end", "a: 1\nb:\n", true},
	{"empty item at end", "a:\n  -\n", true},
	{"nested seq", "a:\n  -\n    - x\n    - y\n  - - z\n", false},
	{"seq of maps", "- a: 1\n  b: 2\n-   c: 3\n    d:\n      - e\n- f\n", true},
	{"map in item, item after", "- a:\n  - x\n- b\n", true},
	{"plain scalars", "a: hello world\nb: a:b\nc: x #comment\nd: 'q # not a comment'\ne: \"k: v\"\nf: a#b\ng: ${{ x }}, [y]\n", true},
	{"numbers", "a: 0\nb: 10\nc: -3\nd: +4\ne: 010\nf: 0x1F\ng: 1e3\nh: .inf\ni: 1.5\nj: 09\nk: 123456789012345678901\n", false},
	{"decimal floats", "temperature: 0.2\nb: -1.5\nc: +3.25\nd: 01.50\ne: [0.5, 2.0]\n", true},
	{"floats left to yaml.v3", "f: 1.2.3\ng: 1.\nh: 12345678901234567.5\n", false},
	{"ints", "a: 0\nb: 10\nc: -3\nd: +4\ne: 123456789012345678\n", true},
	{"bools and nulls", "a: true\nb: False\nc: TRUE\nd: yes\ne: no\nf: on\ng: off\nh: ~\ni: null\nj: Null\nk: NULL\nl: y\nm: n\n", true},
	{"quoted", "a: 'it''s'\nb: \"tab\\there \\\"q\\\" \\\\ \\x41 \\u00e9 \\U0001F600\"\nc: ''\nd: \"\"\ne: ' lead and trail '\n", true},
	{"quoted escapes", "a: \"\\0\\a\\b\\e\\f\\v\\r\\n\\ \"\n", true},
	{"odd escapes", "a: \"\\N\\_\\L\\P\"\n", false},
	{"quoted keys", "'a b': 1\n\"c\": 2\n'd' : 3\n", true},
	{"key spaces", "a : 1\n", true},
	{"literal", "a: |\n  line 1\n    more\n  line 3\nb: 1\n", true},
	{"literal strip keep", "a: |-\n  x\n\n\nb: |+\n  y\n\n\nc: |\n  z\n\n\nd: 1\n", true},
	{"literal keep at end", "a: |+\n  y\n\n", true},
	{"literal clip at end", "a: |\n  y\n\n\n", true},
	{"literal leading blanks", "a: |\n\n\n  x\n  y\n", true},
	{"literal spaces line", "a: |\n  x\n     \n  y\n", true},
	{"literal comment", "a: | # about a\n  # not a comment\n  x\n# a comment\nb: 1\n", true},
	{"folded", "a: >\n  one\n  two\n\n  three\n    indented\n  four\n\n\n  five\nb: >-\n  x\n  y\n", true},
	{"folded blanks", "a: >\n\n  x\n\n\n  y\n   z\n  w\n", true},
	{"block in seq", "- |\n  x\n- >\n  y\n- k: |\n    z\n", true},
	{"block indentless", "a:\n- |\n x\n- y\n", true},
	{"indentation indicator", "a: |2\n    x\n", false},
	{"flow", "a: [1, 'b', \"c\", {d: e, f: [g]}, []]\nb: {}\nc: {x: 1,}\nd: [ a , b ]\n", true},
	{"flow odd", "a: [a: b]\nb: {a}\n", false},
	{"flow multi-line", "a: [1,\n  2]\n", false},
	{"comments", "# head\na: 1 # line\n  # indented\n# foot\nb: 2\n\n# end\n", true},
	{"doc start", "---\na: 1\n", true},
	{"doc start comment", "--- # c\na: 1\n", true},
	{"doc end", "a: 1\n...\n", true},
	{"doc end, comment", "---\na:\n  - |+\n    x\n\n... # end\n# more\n", true},
	{"doc end, empty value", "a:\n...\n", true},
	{"doc end, more", "a: 1\n...\nb: 2\n", false},
	{"doc end, second", "a: 1\n...\n---\nb: 2\n", false},
	{"two docs", "a: 1\n---\nb: 2\n", false},
	{"directive", "%YAML 1.2\n---\na: 1\n", false},
	{"anchor alias", "a: &x 1\nb: *x\n", false},
	{"tag", "a: !!str 1\n", false},
	{"merge", "a: {x: 1}\nb:\n  <<: {y: 2}\n", false},
	{"complex key", "? a\n: b\n", false},
	{"tab", "a:\n\t- b\n", false},
	{"tab in value", "a: b\tc\n", false},
	{"crlf", "a: 1\r\nb: |\r\n  x\r\n  y\r\nc: 'z'\r\n", true},
	{"bom", "\ufeffa: 1\nb: c\n", true},
	{"non-ascii", "ключ: значение\nk: 'é' # c\nl: [ü, 'ö', {ä: ß}]\nm: \"日本\" \n- x\n", false},
	{"non-ascii ok", "ключ: значение\nk: 'é' # c\nl: [ü, 'ö', {ä: ß}]\nm: \"日本\" \nn: |\n  日本\n", true},
	{"duplicate keys", "a: 1\na: 2\n", true},
	{"trailing spaces", "a: 1   \nb:    \nc: 'x'   \nd:   \n  - e   \n", true},
	{"long line", "a: " + strings.Repeat("x", 5000) + "\n", true},
	{"long key", strings.Repeat("k", 1100) + ": 1\n", false},
	{"long flow key", "a: {" + strings.Repeat("k", 1100) + ": 1}\n", false},
	{"deep flow", "a: " + strings.Repeat("[", 150) + strings.Repeat("]", 150) + "\n", false},
	{"nested flow", "a: " + strings.Repeat("[", 50) + "x" + strings.Repeat("]", 50) + "\n", true},
	{"multi-line plain", "a: b\n  c\n", false},
	{"multi-line quoted", "a: 'b\n  c'\n", false},
	{"bad indent", "a:\n  b: 1\n c: 2\n", false},
	{"map after seq", "a:\n  - x\n  b: 1\n", false},
	{"scalar doc", "hello\n", false},
	{"empty", "", false},
	{"comments only", "# x\n", false},
	{"no final newline", "a: 1", false},
	{"value then key", "a: b: c\n", false},
	{"deep", "a:\n  b:\n    c:\n      - d:\n          e: [f]\n        g: h\n  i: j\n", true},
	{"dash values", "a: -x\nb: --flag\nc: [-1, -y]\n", true},
	{"key with colon value", "url: http://x:80/y\n", true},
	{"indented root", "  a: 1\n  b: 2\n", true},
	{"seq root", "- 1\n- 2\n", true},
}

func TestFastYAMLCases(t *testing.T) {
	for _, c := range fastYAMLCases {
		t.Run(c.name, func(t *testing.T) {
			ok := checkFast(t, c.name, []byte(c.src))
			if c.fast && !ok {
				t.Errorf("the fast reader leaves %q to yaml.v3", c.src)
			}
		})
	}
}

// repoYAML is every .yaml and .yml file of the repository.
func repoYAML(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[path] = src
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFastYAMLRepoFiles(t *testing.T) {
	files := repoYAML(t)
	fast, examples, examplesFast := 0, 0, 0
	for path, src := range files {
		ok := checkFast(t, path, src)
		if ok {
			fast++
		}
		if strings.Contains(path, "examples"+string(filepath.Separator)) {
			examples++
			if ok {
				examplesFast++
			}
		}
	}
	t.Logf("%d of %d files read by the fast reader; examples %d of %d", fast, len(files), examplesFast, examples)
	if examples == 0 || examplesFast*3 < examples*2 {
		t.Errorf("the fast reader read %d of %d example plans, want most", examplesFast, examples)
	}
}

// genresume is the plan of n steps internal/runs/testdata/genresume.go writes
// (the plan of the resume figures).
func genresume(tb testing.TB, n int) []byte {
	out := filepath.Join(tb.TempDir(), "plan.yaml")
	cmd := exec.Command("go", "run", "../runs/testdata/genresume.go", fmt.Sprint(n), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("genresume: %v\n%s", err, b)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

func TestFastYAMLGeneratedPlans(t *testing.T) {
	src := genresume(t, 300)
	if !checkFast(t, "genresume", src) {
		t.Errorf("the fast reader leaves the genresume plan to yaml.v3")
	}
	if !checkFast(t, "bigPlan", bigPlan(50)) {
		t.Errorf("the fast reader leaves bigPlan to yaml.v3")
	}
	fast := 0
	const plans = 60
	for i := range plans {
		src := planfuzz.Plan(rand.New(rand.NewPCG(uint64(i), 7)), 5+i%20, planfuzz.Options{Cross: i%2 == 0})
		if checkFast(t, fmt.Sprintf("planfuzz %d", i), []byte(src)) {
			fast++
		}
	}
	t.Logf("fast reader: %d of %d planfuzz plans", fast, plans)
	if fast < plans/2 {
		t.Errorf("the fast reader read %d of %d planfuzz plans, want most", fast, plans)
	}
}

func FuzzFastYAML(f *testing.F) {
	for _, c := range fastYAMLCases {
		f.Add([]byte(c.src))
	}
	f.Add(bigPlan(3))
	r := rand.New(rand.NewPCG(3, 4))
	for range 40 {
		f.Add(randomYAML(r))
	}
	for i := range 5 {
		f.Add([]byte(planfuzz.Plan(rand.New(rand.NewPCG(uint64(i), 7)), 4, planfuzz.Options{})))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkFast(t, "input", src)
	})
}

// BenchmarkYAMLRead is the YAML step of loading a plan alone: the 10k-step
// resume plan read by yaml.v3 and by the fast reader.
func BenchmarkYAMLRead(b *testing.B) {
	src := genresume(b, 10000)
	b.Run("yaml.v3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var d yaml.Node
			if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := fastYAML(string(src)); !ok {
				b.Fatal("not read")
			}
		}
	})
}

// randomYAML writes a random document from the pieces plans are made of,
// with the odd forms among them: scalars of every style, empty values,
// block scalars with blank lines and every chomping, flow collections,
// comments, indentation of 1 to 4 spaces, CRLF line ends.
func randomYAML(r *rand.Rand) []byte {
	var b strings.Builder
	scalars := []string{"a", "hello world", "x #c", "a:b", "${{ x }}", "[y]", "0", "10", "-3", "+4", "010", "0x1F",
		"1e3", ".inf", "1.5", "0.25", "-2.0", "1.", "1.2.3", "09", "10s", "2001-12-14", "yes", "no", "on", "off", "~", "null", "Null", "true", "FALSE",
		"'q # c'", "'it''s'", "\"k: v\"", "\"\\t\\u00e9\\x41\"", "\"\"", "''", "é", "日本 語", "-x", "--flag", "a  b", "a\tb",
		"<<", "&a x", "*a", "!!str x", "?x", ":x", "x:", "@x", "`x`", "\"a\\/b\"", "'a\n  b'", "a #", "#", "- x", "{a: 1}",
		"[1, 'b', {c: d}]", "{}", "[]", "{a: [b, c], 'd': \"e\",}", "[a: b]", "{a}", "[a,,b]", "{a: 1 #c}"}
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	blockScalar := func(ind string) string {
		var s strings.Builder
		s.WriteString(pick([]string{"|", "|-", "|+", ">", ">-", ">+", "|2", "| # c"}))
		s.WriteString("\n")
		extra := pick([]string{"", " ", "  ", "\t"})
		for range r.IntN(5) {
			switch r.IntN(5) {
			case 0:
				s.WriteString("\n")
			case 1:
				s.WriteString(ind + "  " + extra + "\n")
			default:
				s.WriteString(ind + "  " + pick([]string{"", " ", "  "}) + pick(scalars) + "\n")
			}
		}
		return s.String()
	}
	var node func(ind string, depth int, inSeq bool)
	value := func(ind string, depth int) {
		switch n := r.IntN(10); {
		case n < 5:
			b.WriteString(" " + pick(scalars) + pick([]string{"", "", " ", " # c"}) + "\n")
		case n < 6:
			b.WriteString(pick([]string{"", " ", " # c"}) + "\n")
		case n < 7:
			b.WriteString(" " + blockScalar(ind))
		default:
			b.WriteString(pick([]string{"", " # c"}) + "\n")
			if depth < 4 {
				node(ind+pick([]string{"", " ", "  ", "    "}), depth+1, false)
			}
		}
	}
	node = func(ind string, depth int, inSeq bool) {
		seq := r.IntN(3) == 0
		for i := range 1 + r.IntN(4) {
			if r.IntN(6) == 0 {
				b.WriteString(pick([]string{"\n", ind + "# c\n", "#\n", "  \n"}))
			}
			first := ind
			if inSeq && i == 0 {
				first = ""
			}
			if seq {
				b.WriteString(first + "-")
				if r.IntN(3) == 0 && depth < 4 {
					b.WriteString(" ")
					node(ind+"  ", depth+1, true)
					continue
				}
				value(ind+"  ", depth)
				continue
			}
			b.WriteString(first + pick([]string{"k", "key", "'q'", "\"d\"", "é", "a b", "true", "1", "k" + fmt.Sprint(i)}) + pick([]string{":", " :"}))
			value(ind, depth)
		}
	}
	if r.IntN(5) == 0 {
		b.WriteString(pick([]string{"---\n", "--- # c\n", "# head\n", "\ufeff", "\n"}))
	}
	node(pick([]string{"", "", " "}), 0, false)
	if r.IntN(8) == 0 {
		b.WriteString(pick([]string{"...\n", "---\nb: 2\n", "# end\n", "x"}))
	}
	s := b.String()
	if r.IntN(6) == 0 {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return []byte(s)
}

func TestFastYAMLRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n, fast := 4000, 0
	if testing.Short() {
		n = 400
	}
	for i := range n {
		src := randomYAML(r)
		if checkFast(t, fmt.Sprintf("random %d: %q", i, src), src) {
			fast++
		}
	}
	t.Logf("the fast reader read %d of %d", fast, n)
	if fast < n/10 {
		t.Errorf("the fast reader read %d of %d random documents, want more", fast, n)
	}
}
