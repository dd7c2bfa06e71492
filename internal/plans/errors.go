// Package plans turns a plan's YAML into a checked Plan. It keeps every
// node's line and column, and reports every problem at once.
package plans

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is one problem in a plan file, at a line and column.
type Error struct {
	File string
	Line int
	Col  int
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Errors is every problem found in a plan, in file order.
type Errors []*Error

func (l Errors) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Sort orders problems by position.
func (l Errors) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].File != l[j].File {
			return l[i].File < l[j].File
		}
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Col < l[j].Col
	})
}

// Reporter collects problems for one file.
type Reporter struct {
	File string
	List Errors
}

// At records a problem at node (or at line 1 when node is nil).
func (r *Reporter) At(n *yaml.Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil {
		line, col = n.Line, n.Column
	}
	r.AtPos(line, col, format, args...)
}

// AtPos records a problem at an explicit position.
func (r *Reporter) AtPos(line, col int, format string, args ...any) {
	r.List = append(r.List, &Error{File: r.File, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}

// Err returns the problems as an error, sorted, or nil when there are none.
func (r *Reporter) Err() error {
	if len(r.List) == 0 {
		return nil
	}
	r.List.Sort()
	return r.List
}

// Suggest returns ` (did you mean "x"?)` when one candidate is close to
// name, or "".
func Suggest(name string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := distance(strings.ToLower(name), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	limit := 2
	if len(name) <= 4 {
		limit = 1
	}
	if best == "" || bestD > limit {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance, with a transposition counted as one.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// UnknownAgent says that name is not one of agents (a plan's, in its
// order), and which it could have been: the one wording of the problem
// wherever a step or a flag names an agent.
func UnknownAgent(name string, agents []string) string {
	if len(agents) == 0 {
		return fmt.Sprintf("unknown agent %q: the plan has no agents", name)
	}
	return fmt.Sprintf("unknown agent %q (agents: %s)%s", name, strings.Join(agents, ", "), Suggest(name, agents))
}
