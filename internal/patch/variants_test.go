package patch

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// trial is one apply to check: a tree, a diff, and what must come out.
type trial struct {
	tree    map[string][]byte
	diff    []byte
	opt     Options
	want    map[string][]byte
	already bool   // the diff is already applied: expect AlreadyApplied and no change
	refuse  bool   // only a refusal that leaves the tree as it was is right
	cut     bool   // the diff was cut off: a refusal or the whole right result will do
	skip    bool   // the variant does not fit this diff: not counted
	invalid string // the trial could not be made: the test is broken
}

type variant struct {
	name    string
	located bool // the diff's line numbers are still right
	make    func(rng *rand.Rand, c *corpusCase) trial
}

func files(c *corpusCase, pick func(caseFile) []byte) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range c.files {
		m[f.path] = pick(f)
	}
	return m
}

func orig(f caseFile) []byte   { return f.orig }
func edited(f caseFile) []byte { return f.edited }

var detect = Options{Strip: DetectStrip, NoBackup: true}

var variants = []variant{
	{"exact", true, func(_ *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, orig), diff: c.diff, opt: detect, want: files(c, edited)}
	}},
	{"shifted line numbers", false, func(rng *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, orig), diff: shift(rng, c.diff), opt: detect, want: files(c, edited)}
	}},
	{"shifted, no heading", false, func(rng *rand.Rand, c *corpusCase) trial {
		d := mapHeaders(shift(rng, c.diff), func(os, oc, ns, nc int, _ string) string { return header(os, oc, ns, nc, "") })
		return trial{tree: files(c, orig), diff: d, opt: detect, want: files(c, edited)}
	}},
	// The counts of a diff's last hunk, which runs to the end of the
	// answer, are what shows it was not cut off: they are left right here
	// and only the fenced variant below (the closing fence shows the
	// answer went on) gets them wrong too.
	{"wrong counts", true, func(rng *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, orig), diff: wrongCounts(rng, c.diff, false), opt: detect, want: files(c, edited)}
	}},
	{"wrong counts, fenced", true, func(rng *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, orig), diff: fenced(wrongCounts(rng, c.diff, true)), opt: detect, want: files(c, edited)}
	}},
	// An answer whose provider said it ended whole (Options.Ended): every
	// hunk's counts wrong, or none given, the last one's too, unfenced.
	{"wrong counts, ended", true, func(rng *rand.Rand, c *corpusCase) trial {
		o := detect
		o.Ended = true
		return trial{tree: files(c, orig), diff: wrongCounts(rng, c.diff, true), opt: o, want: files(c, edited)}
	}},
	{"@@ ... @@ headers, ended", false, func(rng *rand.Rand, c *corpusCase) trial {
		o := detect
		o.Ended = true
		return trial{tree: files(c, orig), diff: noNumbers(rng, c.diff), opt: o, want: files(c, edited)}
	}},
	{"@@ ... @@ headers", false, func(rng *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, orig), diff: fenced(noNumbers(rng, c.diff)), opt: detect, want: files(c, edited)}
	}},
	{"trailing ws stripped", true, func(_ *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, func(f caseFile) []byte { return f.deco }), diff: stripOldWS(c.decoDiff),
			opt: detect, want: files(c, func(f caseFile) []byte { return f.decoEdit })}
	}},
	{"fenced with prose", true, func(_ *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, orig), diff: fenced(c.diff), opt: detect, want: files(c, edited)}
	}},
	{"no a/ b/ prefixes", true, func(_ *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, orig), diff: noPrefix(c.diff), opt: detect, want: files(c, edited)}
	}},
	{"CRLF target, LF diff", true, func(_ *rand.Rand, c *corpusCase) trial {
		crlf := func(pick func(caseFile) []byte) func(caseFile) []byte {
			return func(f caseFile) []byte { return bytes.ReplaceAll(pick(f), []byte("\n"), []byte("\r\n")) }
		}
		return trial{tree: files(c, crlf(orig)), diff: c.diff, opt: detect, want: files(c, crlf(edited))}
	}},
	{"already applied", true, func(_ *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, edited), diff: c.diff, opt: detect, want: files(c, edited), already: true}
	}},
	{"reverse", true, func(_ *rand.Rand, c *corpusCase) trial {
		o := detect
		o.Reverse = true
		return trial{tree: files(c, edited), diff: c.diff, opt: o, want: files(c, orig)}
	}},
	{"all of the above", false, func(rng *rand.Rand, c *corpusCase) trial {
		d := fenced(noPrefix(stripOldWS(wrongCounts(rng, shift(rng, c.decoDiff), true))))
		return trial{tree: files(c, func(f caseFile) []byte { return f.deco }), diff: d, opt: detect,
			want: files(c, func(f caseFile) []byte { return f.decoEdit })}
	}},
	{"partly applied", true, func(rng *rand.Rand, c *corpusCase) trial {
		return partlyApplied(rng, c)
	}},
	{"all, no numbers", false, func(rng *rand.Rand, c *corpusCase) trial {
		d := fenced(noPrefix(stripOldWS(noNumbers(rng, c.decoDiff))))
		return trial{tree: files(c, func(f caseFile) []byte { return f.deco }), diff: d, opt: detect,
			want: files(c, func(f caseFile) []byte { return f.decoEdit })}
	}},
}

var hunkRe = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$`)

// mapLines rewrites a diff line by line. inHunk tells whether the line is
// in a hunk body (or is a hunk header).
func mapLines(diff []byte, f func(line string, inHunk bool) string) []byte {
	var b strings.Builder
	in := false
	for _, l := range splitKeep(diff) {
		if strings.HasPrefix(l, "diff --git ") {
			in = false
		}
		if strings.HasPrefix(l, "@@") {
			in = true
		}
		b.WriteString(f(l, in))
	}
	return []byte(b.String())
}

func mapHeaders(diff []byte, f func(os, oc, ns, nc int, rest string) string) []byte {
	return mapLines(diff, func(l string, _ bool) string {
		m := hunkRe.FindStringSubmatch(strings.TrimSuffix(l, "\n"))
		if m == nil {
			return l
		}
		n := func(s string, def int) int {
			if s == "" {
				return def
			}
			v, _ := strconv.Atoi(s)
			return v
		}
		return f(n(m[1], 0), n(m[2], 1), n(m[3], 0), n(m[4], 1), m[5]) + "\n"
	})
}

func header(os, oc, ns, nc int, rest string) string {
	return fmt.Sprintf("@@ -%d,%d +%d,%d @@%s", os, oc, ns, nc, rest)
}

// shift moves every hunk: by one amount per file plus a little per hunk.
func shift(rng *rand.Rand, diff []byte) []byte {
	base := 0
	return mapLines(diff, func(l string, in bool) string {
		if strings.HasPrefix(l, "diff --git ") {
			base = rng.IntN(121) - 60
			if base == 0 {
				base = 7
			}
		}
		if !strings.HasPrefix(l, "@@") {
			return l
		}
		d := base + rng.IntN(11) - 5
		return string(mapHeaders([]byte(l), func(os, oc, ns, nc int, rest string) string {
			mv := func(x int) int { return max(1, x+d) }
			return header(mv(os), oc, mv(ns), nc, rest)
		}))
	})
}

// wrongCounts puts every hunk's counts off by a few lines; the last
// hunk's too when last is true.
func wrongCounts(rng *rand.Rand, diff []byte, last bool) []byte {
	n, final := 0, strings.Count("\n"+string(diff), "\n@@")
	return mapHeaders(diff, func(os, oc, ns, nc int, rest string) string {
		if n++; n == final && !last {
			return header(os, oc, ns, nc, rest)
		}
		bump := func(x int) int {
			d := rng.IntN(7) - 3
			if d == 0 {
				d = 2
			}
			return max(0, x+d)
		}
		return header(os, bump(oc), ns, bump(nc), rest)
	})
}

func noNumbers(rng *rand.Rand, diff []byte) []byte {
	return mapHeaders(diff, func(_, _, _, _ int, _ string) string {
		if rng.IntN(2) == 0 {
			return "@@ ... @@"
		}
		return "@@ @@"
	})
}

// stripOldWS drops trailing blanks from context and removed lines, as a
// model copying the file does.
func stripOldWS(diff []byte) []byte {
	return mapLines(diff, func(l string, in bool) string {
		if !in || !(strings.HasPrefix(l, " ") || strings.HasPrefix(l, "-")) {
			return l
		}
		body, nl := strings.CutSuffix(l, "\n")
		body = body[:1] + strings.TrimRight(body[1:], " \t")
		if body == " " {
			body = "" // a blank context line loses its space too
		}
		if nl {
			body += "\n"
		}
		return body
	})
}

func fenced(diff []byte) []byte {
	return []byte("I found the problem. Here is the patch:\n\n```diff\n" + string(diff) + "```\n\nThis fixes it; run the tests to check.\n")
}

func noPrefix(diff []byte) []byte {
	return mapLines(diff, func(l string, in bool) string {
		switch {
		case in:
			return l
		case strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "index "):
			return ""
		case strings.HasPrefix(l, "--- a/"):
			return "--- " + l[6:]
		case strings.HasPrefix(l, "+++ b/"):
			return "+++ " + l[6:]
		}
		return l
	})
}

func writeTree(t testing.TB, dir string, tree map[string][]byte) {
	t.Helper()
	for p, b := range tree {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree reads every file under dir except our backups.
func readTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".runner" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		m[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameTree(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

type tally struct{ n, right, refused, ambiguous, needless, cutoff, wrong int }

// partlyApplied is the tree with some of the diff's hunks applied and
// others not, made without the placer: each chosen hunk goes at its
// header's line (the numbers of an exact diff are right). The diff can then
// be neither applied nor called applied: it must be refused.
func partlyApplied(rng *rand.Rand, c *corpusCase) trial {
	fds, _, err := parse(c.diff, 1<<20)
	if err != nil {
		return trial{invalid: err.Error()}
	}
	total := 0
	for _, fd := range fds {
		total += len(fd.hunks)
	}
	if total < 2 {
		return trial{skip: true}
	}
	chosen := make([]bool, total)
	for n := 0; n == 0 || n == total; {
		n = 0
		for i := range chosen {
			chosen[i] = rng.IntN(2) == 0
			if chosen[i] {
				n++
			}
		}
	}
	tree := files(c, orig)
	i := 0
	for fi, fd := range fds {
		var hs []*hunk
		var at []int
		for _, h := range fd.hunks {
			if chosen[i] {
				hs, at = append(hs, h), append(at, h.oldHint)
			}
			i++
		}
		f := c.files[fi]
		if treePath(tree, fd.newName) != f.path {
			return trial{invalid: fmt.Sprintf("section %d of the diff is for %s, not %s", fi+1, fd.newName, f.path)}
		}
		lines := splitKeep(f.orig)
		if len(hs) == len(fd.hunks) && build(lines, hs, at) != string(f.edited) {
			return trial{invalid: "applying every hunk of " + f.path + " at its line does not give the edited file"}
		}
		if len(hs) > 0 {
			tree[f.path] = []byte(build(lines, hs, at))
		}
	}
	return trial{tree: tree, diff: c.diff, opt: detect, refuse: true}
}

// run applies a trial in a fresh directory and says how it went.
func (tr trial) run(t testing.TB, dir string) (string, string) {
	t.Helper()
	switch {
	case tr.invalid != "":
		return "invalid", tr.invalid
	case tr.skip:
		return "skip", ""
	}
	writeTree(t, dir, tr.tree)
	res, err := Apply(context.Background(), dir, tr.diff, tr.opt)
	got := readTree(t, dir)
	switch {
	case tr.refuse && err != nil && sameTree(got, tr.tree):
		return "right", err.Error()
	case tr.refuse:
		return "wrong", fmt.Sprintf("a partly applied diff was not refused: err=%v result=%+v\n%s", err, res, firstDiff(got, tr.tree))
	case tr.cut && err != nil && sameTree(got, tr.tree):
		var re *RefusedError
		if errors.As(err, &re) && re.Truncated {
			return "cut off", err.Error()
		}
		return "refused", err.Error()
	case tr.cut && err == nil && sameTree(got, tr.want):
		return "right", "" // the cut lost nothing that changes the result
	case tr.cut:
		return "wrong", fmt.Sprintf("a diff cut off was applied: err=%v result=%+v\n%s", err, res, firstDiff(got, tr.want))
	case err != nil && sameTree(got, tr.tree):
		var re *RefusedError
		if errors.As(err, &re) && re.Ambiguous {
			return "ambiguous", err.Error()
		}
		return "refused", err.Error()
	case err != nil:
		return "wrong", "refused but changed the tree: " + err.Error()
	case tr.already && res.AlreadyApplied && sameTree(got, tr.tree):
		return "right", ""
	case !tr.already && !res.AlreadyApplied && sameTree(got, tr.want):
		return "right", ""
	}
	return "wrong", fmt.Sprintf("already=%v result=%+v\n%s", res.AlreadyApplied, res, firstDiff(got, tr.want))
}

func firstDiff(got, want map[string][]byte) string {
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			return p + ": missing"
		}
		if !bytes.Equal(g, w) {
			gl, wl := splitKeep(g), splitKeep(w)
			for i := 0; i < max(len(gl), len(wl)); i++ {
				var a, b string
				if i < len(gl) {
					a = gl[i]
				}
				if i < len(wl) {
					b = wl[i]
				}
				if a != b {
					return fmt.Sprintf("%s: first difference at line %d: got %q want %q", p, i+1, a, b)
				}
			}
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			return p + ": unexpected file"
		}
	}
	return ""
}

// TestCorpus applies every variant of every corpus diff and checks the
// rates. Goals: every exact diff right; never a wrong result; at least 99%
// right for every variant. Where the diff no longer says where a hunk goes
// (shifted or missing numbers) and its text occurs in several places that
// give different files, the only right answer is a refusal: such a diff
// counts as right once the oracle (ambiguity_test.go) has shown, without
// the placer, that it is open. A refusal as ambiguous the oracle cannot
// show is needed is "needless", and counts against the rate.
var corpusSize = flag.Int("corpus", 300, "how many diffs TestCorpus builds (more for a deeper local run)")

func TestCorpus(t *testing.T) {
	n := *corpusSize
	if testing.Short() {
		n = min(n, 40)
	}
	start := time.Now()
	cases := buildCorpus(t, n)
	built := time.Since(start)
	base := fastTempDir(t)
	var hunks, nfiles int
	for i := range cases {
		nfiles += len(cases[i].files)
		hunks += strings.Count(string(cases[i].diff), "\n@@ ")
	}

	type job struct {
		vi, ci int
		tr     trial
	}
	var jobs []job
	for vi, v := range variants {
		rng := randFor(vi) // trials are made in a fixed order: reproducible
		for ci := range cases {
			jobs = append(jobs, job{vi, ci, v.make(rng, &cases[ci])})
		}
	}
	results := make([]string, len(jobs))
	details := make([]string, len(jobs))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ { // the trials wait on fsync more than on the CPU
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				dir := filepath.Join(base, strconv.Itoa(i))
				results[i], details[i] = jobs[i].tr.run(t, dir)
				if results[i] == "ambiguous" {
					open, why := ambiguity(t, jobs[i].tr)
					if !open {
						results[i] = "needless"
					}
					details[i] = why + "\n" + details[i]
				}
				os.RemoveAll(dir)
			}
		}()
	}
	for i := range jobs {
		work <- i
	}
	close(work)
	wg.Wait()
	t.Logf("corpus built in %v, %d trials run in %v", built.Round(time.Millisecond), len(jobs), (time.Since(start) - built).Round(time.Millisecond))

	tallies := make([]tally, len(variants))
	examples := map[string][]string{}
	for i, j := range jobs {
		tl := &tallies[j.vi]
		switch results[i] {
		case "skip":
			continue
		case "invalid":
			t.Errorf("%s: case %d could not be made: %s", variants[j.vi].name, j.ci, details[i])
			continue
		case "right":
			tl.right++
		case "ambiguous":
			tl.ambiguous++
		case "refused":
			tl.refused++
		case "needless":
			tl.needless++
		case "cut off":
			tl.cutoff++
		default:
			tl.wrong++
		}
		tl.n++
		if v := variants[j.vi]; results[i] != "right" && ((results[i] != "ambiguous" && results[i] != "cut off") || len(examples[v.name]) < 3) {
			examples[v.name] = append(examples[v.name], fmt.Sprintf("case %d (%s): %s: %s\n--- diff:\n%s",
				j.ci, results[i], strings.Join(paths(&cases[j.ci]), " "), details[i], clipText(string(j.tr.diff), 40)))
		}
	}

	t.Logf("corpus: %d diffs, %d files, %d hunks, from %s", len(cases), nfiles, hunks, runtime.Version())
	t.Logf("%-30s %6s %6s %9s %8s %8s %7s %6s %8s %10s", "variant", "diffs", "right", "ambiguous", "needless", "refused", "cut off", "wrong", "right %", "right+amb %")
	for vi, v := range variants {
		tl := tallies[vi]
		pct := func(x int) float64 { return 100 * float64(x) / float64(max(tl.n, 1)) }
		t.Logf("%-30s %6d %6d %9d %8d %8d %7d %6d %7.1f%% %9.1f%%", v.name, tl.n, tl.right, tl.ambiguous, tl.needless, tl.refused, tl.cutoff, tl.wrong, pct(tl.right), pct(tl.right+tl.ambiguous))
	}
	for vi, v := range variants {
		tl := tallies[vi]
		if cutKinds[v.name] {
			// A diff cut off has no right result to reach: the goal is
			// that none is applied wrongly.
			if tl.wrong > 0 {
				t.Errorf("%s: %d wrong results", v.name, tl.wrong)
			}
			if tl.wrong > 0 || testing.Verbose() {
				for _, e := range examples[v.name] {
					t.Logf("%s: %s", v.name, e)
				}
			}
			continue
		}
		ok := tl.right
		if !v.located {
			ok += tl.ambiguous
		}
		goal := 0.99
		if v.name == "exact" {
			goal = 1
		}
		if tl.wrong > 0 {
			t.Errorf("%s: %d wrong results", v.name, tl.wrong)
		}
		if float64(ok) < goal*float64(tl.n) {
			t.Errorf("%s: %d of %d right, below %.0f%%", v.name, ok, tl.n, goal*100)
		}
		if tl.wrong > 0 || float64(ok) < goal*float64(tl.n) || testing.Verbose() {
			for _, e := range examples[v.name] {
				t.Logf("%s: %s", v.name, e)
			}
		}
	}
}

// fastTempDir is a temporary directory on tmpfs when there is one: the
// trials' cost is all fsync, which is free there and proves nothing.
func fastTempDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "patch-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

func randFor(i int) *rand.Rand { return rand.New(rand.NewPCG(uint64(i)+100, 7)) }

func paths(c *corpusCase) []string {
	var out []string
	for _, f := range c.files {
		out = append(out, f.path)
	}
	return out
}

func clipText(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}
