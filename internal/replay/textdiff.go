package replay

import (
	"fmt"
	"strings"
)

// UnifiedDiff shows how b differs from a, as `diff -u` would, with three
// lines of context. It is for prompts and results, which are small; past
// maxDiffLines it compares only the first lines.
func UnifiedDiff(nameA, nameB, a, b string) string {
	x, y := splitLines(a), splitLines(b)
	const maxDiffLines = 3000
	if len(x) > maxDiffLines {
		x = x[:maxDiffLines]
	}
	if len(y) > maxDiffLines {
		y = y[:maxDiffLines]
	}
	ops := lineOps(x, y)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	const ctx = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from ctx lines before this change to ctx lines after the
		// last change that is within 2*ctx of the previous one.
		start := max(i-ctx, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*ctx {
				break
			}
		}
		end = min(end+ctx+1, len(ops))
		aStart, bStart := ops[start].a, ops[start].b
		var na, nb int
		var body strings.Builder
		for _, op := range ops[start:end] {
			body.WriteString(string(op.kind) + op.text + "\n")
			if op.kind != '+' {
				na++
			}
			if op.kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n%s", aStart+1, na, bStart+1, nb, body.String())
		i = end
	}
	return out.String()
}

type lineOp struct {
	kind byte // ' ', '-', '+'
	text string
	a, b int // line index in each side where the op stands
}

// lineOps aligns two line lists by their longest common subsequence.
func lineOps(x, y []string) []lineOp {
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, lineOp{' ', x[i], i, j})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, lineOp{'-', x[i], i, j}) // deletions first, as diff -u
			i++
		default:
			ops = append(ops, lineOp{'+', y[j], i, j})
			j++
		}
	}
	return ops
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
