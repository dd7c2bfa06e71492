package patch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The corpus of TestCorpus (real Go files, edited, diffed by git) written
// in the other edit formats, each then damaged the way models damage it.
// A right result is the edited files byte for byte (or, for an answer cut
// off, a refusal); a refusal that leaves the tree as it was is safe;
// anything else is wrong, and fails the test.

// block is one hunk of a corpus diff as a SEARCH/REPLACE block or an
// apply_patch hunk: its ops and git's heading.
type block struct {
	path    string
	ops     []textOp
	heading string
}

// blocks are the hunks of c's diff (diff: c.diff or c.decoDiff), or ok
// false when the formats cannot say what the diff says: a change to the
// newline at the end of a file, or a hunk with no old lines.
func blocks(diff []byte, c *corpusCase) (out [][]block, ok bool) {
	fds, _, err := parse(diff, 1<<20)
	if err != nil || len(fds) != len(c.files) {
		return nil, false
	}
	for i, fd := range fds {
		var bs []block
		for _, h := range fd.hunks {
			if h.oldNoEOL != h.newNoEOL {
				return nil, false
			}
			old, _ := h.sides()
			if len(old) == 0 {
				return nil, false
			}
			bs = append(bs, block{path: c.files[i].path, ops: textOps(h), heading: sectionText(h.header)})
		}
		out = append(out, bs)
	}
	return out, true
}

// srAnswer writes blocks as SEARCH/REPLACE blocks, each after its path,
// as Aider asks; fix may change each block's SEARCH and REPLACE lines.
func srAnswer(files [][]block, fenced bool, fix func(search, replace []string) ([]string, []string)) []byte {
	var b strings.Builder
	if fenced {
		b.WriteString("Here are the changes.\n\n")
	}
	for _, bs := range files {
		for _, bl := range bs {
			var search, replace []string
			for _, o := range bl.ops {
				if o.kind != '+' {
					search = append(search, o.text)
				}
				if o.kind != '-' {
					replace = append(replace, o.text)
				}
			}
			if fix != nil {
				search, replace = fix(search, replace)
			}
			b.WriteString(bl.path + "\n")
			if fenced {
				b.WriteString("```go\n")
			}
			b.WriteString("<<<<<<< SEARCH\n")
			for _, l := range search {
				b.WriteString(l + "\n")
			}
			b.WriteString("=======\n")
			for _, l := range replace {
				b.WriteString(l + "\n")
			}
			b.WriteString(">>>>>>> REPLACE\n")
			if fenced {
				b.WriteString("```\n\n")
			}
		}
	}
	if fenced {
		b.WriteString("This keeps the tests passing.\n")
	}
	return []byte(b.String())
}

// apAnswer writes blocks as one apply_patch envelope; fix may change each
// hunk's ops.
func apAnswer(files [][]block, fenced bool, fix func(ops []textOp) []textOp) []byte {
	var b strings.Builder
	if fenced {
		b.WriteString("The patch:\n```\n")
	}
	b.WriteString("*** Begin Patch\n")
	for _, bs := range files {
		b.WriteString("*** Update File: " + bs[0].path + "\n")
		for _, bl := range bs {
			b.WriteString(strings.TrimSpace("@@ "+bl.heading) + "\n")
			ops := bl.ops
			if fix != nil {
				ops = fix(slicesClone(ops))
			}
			for _, o := range ops {
				b.WriteString(string(o.kind) + o.text + "\n")
			}
		}
	}
	b.WriteString("*** End Patch\n")
	if fenced {
		b.WriteString("```\nDone.\n")
	}
	return []byte(b.String())
}

// textOp is an op with its text, for tests that edit texts.
type textOp struct {
	text string
	kind byte
}

func textOps(h *hunk) []textOp {
	out := make([]textOp, len(h.ops))
	for i, o := range h.ops {
		out[i] = textOp{text: h.text(o), kind: o.kind}
	}
	return out
}

func slicesClone(ops []textOp) []textOp { return append([]textOp(nil), ops...) }

// wholeAnswer writes each file whole after its path.
func wholeAnswer(c *corpusCase, pick func(caseFile) []byte, fix func(lines []string) []string) []byte {
	var b strings.Builder
	b.WriteString("The files:\n\n")
	for _, f := range c.files {
		content := strings.TrimSuffix(string(pick(f)), "\n")
		lines := strings.Split(content, "\n")
		if fix != nil {
			lines = fix(lines)
		}
		fence := "```"
		for _, l := range lines {
			for strings.HasPrefix(l, fence) {
				fence += "`"
			}
		}
		b.WriteString(f.path + "\n" + fence + "go\n" + strings.Join(lines, "\n") + "\n" + fence + "\n\n")
	}
	return []byte(b.String())
}

// sameEnds: every file ends with a newline before and after the edit
// alike, which is all the formats other than unified can say.
func sameEnds(c *corpusCase) bool {
	for _, f := range c.files {
		if bytes.HasSuffix(f.orig, []byte("\n")) != bytes.HasSuffix(f.edited, []byte("\n")) {
			return false
		}
	}
	return true
}

var auto = Options{Format: FormatAuto, NoBackup: true}

type formatVariant struct {
	format, name string
	cut          bool
	make         func(rng *rand.Rand, c *corpusCase) trial
}

// shiftIndent puts prefix before every line that is not blank.
func shiftIndent(lines []string, prefix string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			l = prefix + l
		}
		out[i] = l
	}
	return out
}

// cutInside cuts an answer at a random byte between from and to (byte
// offsets), never at a line's end: the cut is inside a block.
func cutInside(rng *rand.Rand, answer []byte, from, to int) ([]byte, bool) {
	if to-from < 2 {
		return nil, false
	}
	at := from + 1 + rng.IntN(to-from-1)
	return answer[:at], true
}

func formatVariants() []formatVariant {
	var vs []formatVariant
	sr := func(name string, cut bool, mk func(rng *rand.Rand, c *corpusCase, bs [][]block) trial) {
		vs = append(vs, formatVariant{FormatSearchReplace, name, cut, func(rng *rand.Rand, c *corpusCase) trial {
			bs, ok := blocks(c.diff, c)
			if !ok || !sameEnds(c) {
				return trial{skip: true}
			}
			return mk(rng, c, bs)
		}})
	}
	ok := func(c *corpusCase, answer []byte) trial {
		return trial{tree: files(c, orig), diff: answer, opt: auto, want: files(c, edited)}
	}
	sr("exact", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial { return ok(c, srAnswer(bs, false, nil)) })
	sr("fenced with prose", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial { return ok(c, srAnswer(bs, true, nil)) })
	sr("indentation shifted", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial {
		return ok(c, srAnswer(bs, true, func(s, r []string) ([]string, []string) {
			return shiftIndent(s, "    "), shiftIndent(r, "    ")
		}))
	})
	sr("indentation uneven", false, func(rng *rand.Rand, c *corpusCase, bs [][]block) trial {
		return ok(c, srAnswer(bs, false, func(s, r []string) ([]string, []string) {
			s = append([]string(nil), s...)
			i := rng.IntN(len(s))
			s[i] = "  " + s[i]
			return s, r
		}))
	})
	sr("trailing ws stripped", false, func(_ *rand.Rand, c *corpusCase, _ [][]block) trial {
		bs, good := blocks(c.decoDiff, c)
		if !good {
			return trial{skip: true}
		}
		d := srAnswer(bs, false, func(s, r []string) ([]string, []string) {
			return normalizeAll(s, wsTrailing), r
		})
		return trial{tree: files(c, func(f caseFile) []byte { return f.deco }), diff: d, opt: auto, want: files(c, func(f caseFile) []byte { return f.decoEdit })}
	})
	sr("missing line", false, func(rng *rand.Rand, c *corpusCase, bs [][]block) trial {
		return ok(c, srAnswer(bs, false, func(s, r []string) ([]string, []string) {
			if len(s) < 3 {
				return s, r
			}
			i := 1 + rng.IntN(len(s)-2)
			return append(append([]string(nil), s[:i]...), s[i+1:]...), r
		}))
	})
	sr("ambiguous anchors (changed lines only)", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial {
		var fixed [][]block
		for _, fbs := range bs {
			var out []block
			for _, bl := range fbs {
				// Only the changed lines, and the line before them when
				// nothing is removed.
				first, last := -1, -1
				for i, o := range bl.ops {
					if o.kind != ' ' {
						if first < 0 {
							first = i
						}
						last = i
					}
				}
				lo := first
				hasOld := false
				for _, o := range bl.ops[first : last+1] {
					hasOld = hasOld || o.kind == '-'
				}
				if !hasOld && lo > 0 {
					lo--
				}
				if !hasOld && lo == first {
					return trial{skip: true}
				}
				out = append(out, block{path: bl.path, ops: bl.ops[lo : last+1]})
			}
			fixed = append(fixed, out)
		}
		return ok(c, srAnswer(fixed, false, nil))
	})
	sr("cut off in the last block", true, func(rng *rand.Rand, c *corpusCase, bs [][]block) trial {
		a := srAnswer(bs, false, nil)
		from := bytes.LastIndex(a, []byte("<<<<<<< SEARCH"))
		d, good := cutInside(rng, a, from, len(a)-1)
		if !good {
			return trial{skip: true}
		}
		return trial{tree: files(c, orig), diff: d, opt: auto, want: files(c, edited), cut: true}
	})
	sr("already applied", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial {
		return trial{tree: files(c, edited), diff: srAnswer(bs, false, nil), opt: auto, want: files(c, edited), already: true}
	})
	sr("CRLF target", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial {
		crlf := func(pick func(caseFile) []byte) func(caseFile) []byte {
			return func(f caseFile) []byte { return bytes.ReplaceAll(pick(f), []byte("\n"), []byte("\r\n")) }
		}
		return trial{tree: files(c, crlf(orig)), diff: srAnswer(bs, false, nil), opt: auto, want: files(c, crlf(edited))}
	})

	ap := func(name string, cut bool, mk func(rng *rand.Rand, c *corpusCase, bs [][]block) trial) {
		vs = append(vs, formatVariant{FormatApplyPatch, name, cut, func(rng *rand.Rand, c *corpusCase) trial {
			bs, ok := blocks(c.diff, c)
			if !ok || !sameEnds(c) {
				return trial{skip: true}
			}
			return mk(rng, c, bs)
		}})
	}
	ap("exact", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial { return ok(c, apAnswer(bs, false, nil)) })
	ap("fenced with prose", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial { return ok(c, apAnswer(bs, true, nil)) })
	ap("indentation shifted", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial {
		return ok(c, apAnswer(bs, false, func(ops []textOp) []textOp {
			for i := range ops {
				if strings.TrimSpace(ops[i].text) != "" {
					ops[i].text = "    " + ops[i].text
				}
			}
			return ops
		}))
	})
	ap("missing context line", false, func(rng *rand.Rand, c *corpusCase, bs [][]block) trial {
		return ok(c, apAnswer(bs, false, func(ops []textOp) []textOp {
			var ctx []int
			for i, o := range ops {
				if o.kind == ' ' && i > 0 && i < len(ops)-1 {
					ctx = append(ctx, i)
				}
			}
			if len(ctx) == 0 {
				return ops
			}
			i := ctx[rng.IntN(len(ctx))]
			return append(ops[:i], ops[i+1:]...)
		}))
	})
	ap("no context around (ambiguous anchors)", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial {
		return ok(c, apAnswer(bs, false, func(ops []textOp) []textOp {
			for len(ops) > 0 && ops[0].kind == ' ' {
				ops = ops[1:]
			}
			for len(ops) > 0 && ops[len(ops)-1].kind == ' ' {
				ops = ops[:len(ops)-1]
			}
			return ops
		}))
	})
	ap("trailing ws stripped", false, func(_ *rand.Rand, c *corpusCase, _ [][]block) trial {
		bs, good := blocks(c.decoDiff, c)
		if !good {
			return trial{skip: true}
		}
		d := apAnswer(bs, false, func(ops []textOp) []textOp {
			for i := range ops {
				if ops[i].kind != '+' {
					ops[i].text = normalize(ops[i].text, wsTrailing)
				}
			}
			return ops
		})
		return trial{tree: files(c, func(f caseFile) []byte { return f.deco }), diff: d, opt: auto, want: files(c, func(f caseFile) []byte { return f.decoEdit })}
	})
	ap("cut off before its end", true, func(rng *rand.Rand, c *corpusCase, bs [][]block) trial {
		a := apAnswer(bs, false, nil)
		from := bytes.Index(a, []byte("*** Update File:"))
		d, good := cutInside(rng, a, from, bytes.LastIndex(a, []byte("*** End Patch")))
		if !good {
			return trial{skip: true}
		}
		return trial{tree: files(c, orig), diff: d, opt: auto, want: files(c, edited), cut: true}
	})
	ap("already applied", false, func(_ *rand.Rand, c *corpusCase, bs [][]block) trial {
		return trial{tree: files(c, edited), diff: apAnswer(bs, false, nil), opt: auto, want: files(c, edited), already: true}
	})

	wh := func(name string, cut bool, mk func(rng *rand.Rand, c *corpusCase) trial) {
		vs = append(vs, formatVariant{FormatWhole, name, cut, func(rng *rand.Rand, c *corpusCase) trial {
			if !sameEnds(c) {
				return trial{skip: true}
			}
			return mk(rng, c)
		}})
	}
	wh("exact", false, func(_ *rand.Rand, c *corpusCase) trial { return ok(c, wholeAnswer(c, edited, nil)) })
	wh("CRLF target", false, func(_ *rand.Rand, c *corpusCase) trial {
		crlf := func(pick func(caseFile) []byte) func(caseFile) []byte {
			return func(f caseFile) []byte { return bytes.ReplaceAll(pick(f), []byte("\n"), []byte("\r\n")) }
		}
		return trial{tree: files(c, crlf(orig)), diff: wholeAnswer(c, edited, nil), opt: auto, want: files(c, crlf(edited))}
	})
	wh("lines left out", false, func(rng *rand.Rand, c *corpusCase) trial {
		d := wholeAnswer(c, edited, func(lines []string) []string {
			i := rng.IntN(len(lines))
			j := min(len(lines), i+1+rng.IntN(20))
			return append(append(append([]string(nil), lines[:i]...), "\t// ... rest of the code unchanged ..."), lines[j:]...)
		})
		return trial{tree: files(c, orig), diff: d, opt: auto, refuse: true}
	})
	wh("cut off inside the file", true, func(rng *rand.Rand, c *corpusCase) trial {
		a := wholeAnswer(c, edited, nil)
		from := bytes.LastIndex(a, []byte("go\n"))
		d, good := cutInside(rng, a, from, len(a)-6)
		if !good {
			return trial{skip: true}
		}
		return trial{tree: files(c, orig), diff: d, opt: auto, want: files(c, edited), cut: true}
	})
	wh("already applied", false, func(_ *rand.Rand, c *corpusCase) trial {
		return trial{tree: files(c, edited), diff: wholeAnswer(c, edited, nil), opt: auto, want: files(c, edited), already: true}
	})
	return vs
}

// TestFormatsCorpus applies every format variant of every corpus diff
// and fails on any wrong result. It logs, per format and damage kind, how
// many came out right, were refused (as ambiguous, as cut off, or
// otherwise) and wrong; docs/diffs.md holds the figures beside the
// unified diff's.
func TestFormatsCorpus(t *testing.T) {
	n := *corpusSize
	if testing.Short() {
		n = min(n, 40)
	}
	cases := buildCorpus(t, n)
	base := fastTempDir(t)
	vs := formatVariants()
	type job struct {
		vi, ci int
		tr     trial
	}
	var jobs []job
	for vi, v := range vs {
		rng := randFor(1000 + vi)
		for ci := range cases {
			jobs = append(jobs, job{vi, ci, v.make(rng, &cases[ci])})
		}
	}
	results := make([]string, len(jobs))
	details := make([]string, len(jobs))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				dir := filepath.Join(base, strconv.Itoa(i))
				results[i], details[i] = jobs[i].tr.run(t, dir)
				os.RemoveAll(dir)
			}
		}()
	}
	for i := range jobs {
		work <- i
	}
	close(work)
	wg.Wait()

	tallies := make([]tally, len(vs))
	examples := map[int][]string{}
	for i, j := range jobs {
		tl := &tallies[j.vi]
		switch results[i] {
		case "skip":
			continue
		case "invalid":
			t.Errorf("%s %s: case %d could not be made: %s", vs[j.vi].format, vs[j.vi].name, j.ci, details[i])
			continue
		case "right":
			tl.right++
		case "ambiguous":
			tl.ambiguous++
		case "refused":
			tl.refused++
		case "cut off":
			tl.cutoff++
		default:
			tl.wrong++
		}
		tl.n++
		if results[i] == "wrong" || (results[i] != "right" && len(examples[j.vi]) < 1) {
			examples[j.vi] = append(examples[j.vi], fmt.Sprintf("case %d (%s): %s\n--- answer:\n%s", j.ci, results[i], details[i], clipText(string(j.tr.diff), 30)))
		}
	}
	t.Logf("%-15s %-40s %6s %6s %9s %8s %7s %6s %8s", "format", "damage", "edits", "right", "ambiguous", "refused", "cut off", "wrong", "right %")
	for vi, v := range vs {
		tl := tallies[vi]
		t.Logf("%-15s %-40s %6d %6d %9d %8d %7d %6d %7.1f%%", v.format, v.name, tl.n, tl.right, tl.ambiguous, tl.refused, tl.cutoff, tl.wrong, 100*float64(tl.right)/float64(max(tl.n, 1)))
		if tl.wrong > 0 {
			t.Errorf("%s, %s: %d wrong results", v.format, v.name, tl.wrong)
		}
		// An exact SEARCH found in two places is refused: blocks carry
		// neither line numbers nor (Aider applies each block to the file
		// as the blocks before left it) an order to tell them apart; so
		// is one whose old and new lines are both there. The floor is
		// below the rates measured at 300 and 3,000 edits (docs/diffs.md);
		// the few dozen edits of -short (the race run) are too few for a
		// rate, so there only "no wrong result" is checked.
		low := v.name == "exact" && !testing.Short() && float64(tl.right) < 0.9*float64(tl.n)
		if low {
			t.Errorf("%s, exact: %d of %d right, below 90%%", v.format, tl.right, tl.n)
		}
		if tl.wrong > 0 || low || testing.Verbose() {
			for _, e := range examples[vi] {
				t.Logf("%s, %s: %s", v.format, v.name, e)
			}
		}
	}
}
