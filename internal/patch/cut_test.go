package patch

import (
	"math/rand/v2"
	"strings"
)

// The damage an answer cut off at the model's token limit does to a
// corpus diff, one kind per variant (TestCorpus). For each, a refusal
// that leaves the tree as it was is right, and so is the whole right
// result (a cut that only lost context); anything else is wrong. A cut
// exactly between two hunks or files leaves a whole diff of fewer
// changes, which nothing can tell from one meant that way: the cuts here
// always leave part of a hunk or of a header.

var cutKinds = map[string]bool{}

func init() {
	add := func(name string, located bool, make func(rng *rand.Rand, c *corpusCase) trial) {
		cutKinds[name] = true
		variants = append(variants, variant{name, located, make})
	}
	cutTrial := func(c *corpusCase, d []byte, ok bool) trial {
		if !ok {
			return trial{skip: true}
		}
		return trial{tree: files(c, orig), diff: d, opt: detect, want: files(c, edited), cut: true}
	}
	add("cut: whole lines of last hunk", true, func(rng *rand.Rand, c *corpusCase) trial {
		d, ok := cutHunk(rng, c.diff, -1, false)
		return cutTrial(c, d, ok)
	})
	add("cut: mid-line in last hunk", true, func(rng *rand.Rand, c *corpusCase) trial {
		d, ok := cutHunk(rng, c.diff, -1, true)
		return cutTrial(c, d, ok)
	})
	add("cut: in an earlier hunk", true, func(rng *rand.Rand, c *corpusCase) trial {
		n := strings.Count("\n"+string(c.diff), "\n@@")
		if n < 2 {
			return trial{skip: true}
		}
		d, ok := cutHunk(rng, c.diff, rng.IntN(n-1), rng.IntN(2) == 0)
		return cutTrial(c, d, ok)
	})
	add("cut: in a header", true, func(rng *rand.Rand, c *corpusCase) trial {
		d, ok := cutHeader(rng, c.diff)
		return cutTrial(c, d, ok)
	})
	add("cut: fence left open", true, func(rng *rand.Rand, c *corpusCase) trial {
		d, ok := cutHunk(rng, c.diff, -1, rng.IntN(2) == 0)
		return cutTrial(c, []byte("Here is the fix:\n\n```diff\n"+string(d)), ok)
	})
	add("cut: no numbers", false, func(rng *rand.Rand, c *corpusCase) trial {
		d, ok := cutHunk(rng, noNumbers(rng, c.diff), -1, rng.IntN(2) == 0)
		return cutTrial(c, d, ok)
	})
	add("cut: all of the above", false, func(rng *rand.Rand, c *corpusCase) trial {
		d := noPrefix(stripOldWS(wrongCounts(rng, shift(rng, c.decoDiff), false)))
		d, ok := cutHunk(rng, d, -1, rng.IntN(2) == 0)
		if !ok {
			return trial{skip: true}
		}
		return trial{tree: files(c, func(f caseFile) []byte { return f.deco }), diff: []byte("```diff\n" + string(d)), opt: detect,
			want: files(c, func(f caseFile) []byte { return f.decoEdit }), cut: true}
	})
	add("cut: reverse", true, func(rng *rand.Rand, c *corpusCase) trial {
		d, ok := cutHunk(rng, c.diff, -1, rng.IntN(2) == 0)
		if !ok {
			return trial{skip: true}
		}
		o := detect
		o.Reverse = true
		return trial{tree: files(c, edited), diff: d, opt: o, want: files(c, orig), cut: true}
	})
}

// cutHunk cuts the diff inside hunk k (0-based over the whole diff; -1:
// the last): after a whole line of its body, or in the middle of one
// (mid). At least one of the hunk's counted lines is lost.
func cutHunk(rng *rand.Rand, diff []byte, k int, mid bool) ([]byte, bool) {
	ls := splitKeep(diff)
	var starts []int
	for i, l := range ls {
		if strings.HasPrefix(l, "@@") {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		return nil, false
	}
	if k < 0 {
		k = len(starts) - 1
	}
	h := starts[k]
	end := len(ls)
	for i := h + 1; i < len(ls); i++ {
		if strings.HasPrefix(ls[i], "@@") || strings.HasPrefix(ls[i], "diff --git ") || (strings.HasPrefix(ls[i], "--- ") && i+1 < len(ls) && strings.HasPrefix(ls[i+1], "+++ ")) {
			end = i
			break
		}
	}
	last := -1 // the hunk's last counted line
	for i := h + 1; i < end; i++ {
		if !strings.HasPrefix(ls[i], `\`) {
			last = i
		}
	}
	if last < 0 {
		return nil, false
	}
	var at []int
	for x := h + 1; x <= last; x++ {
		if !mid || len(strings.TrimSuffix(ls[x], "\n")) >= 2 {
			at = append(at, x)
		}
	}
	if len(at) == 0 {
		return nil, false
	}
	x := at[rng.IntN(len(at))]
	out := strings.Join(ls[:x], "")
	if mid {
		line := strings.TrimSuffix(ls[x], "\n")
		out += line[:1+rng.IntN(len(line)-1)]
	}
	return []byte(out), true
}

// cutHeader cuts the diff inside or right after a header line that comes
// after the first hunk: a later file's "diff --git", "index", "---",
// "+++" or a later hunk's "@@" line. Part of the line is always kept.
func cutHeader(rng *rand.Rand, diff []byte) ([]byte, bool) {
	ls := splitKeep(diff)
	var at []int
	seen := false
	in := false
	for i, l := range ls {
		switch {
		case strings.HasPrefix(l, "@@"):
			if seen {
				at = append(at, i)
			}
			seen, in = true, true
		case strings.HasPrefix(l, "diff --git "):
			in = false
			if seen {
				at = append(at, i)
			}
		case !in && seen:
			at = append(at, i) // index, ---, +++, mode lines
		}
	}
	if len(at) == 0 {
		return nil, false
	}
	x := at[rng.IntN(len(at))]
	line := strings.TrimSuffix(ls[x], "\n")
	out := strings.Join(ls[:x], "")
	if rng.IntN(2) == 0 {
		return []byte(out + line + "\n"), true
	}
	return []byte(out + line[:1+rng.IntN(len(line))]), true
}
