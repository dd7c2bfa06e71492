package junit

import (
	"path/filepath"
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
)

// The facts below are shared with the GitHub Actions annotations and
// summary (cmd/runner), so that all three say the same of a run: which
// failures the plan tolerated, what a step is called, where a file is.

// Tolerated says which steps' failures the plan tolerates, by label:
// continue_on_error on the step or on a parallel group it runs in (the
// group's failure is its child's). It reads the plan the run saved.
func Tolerated(b *board.Board) map[string]bool {
	run := b.Run()
	out := map[string]bool{}
	p, err := plans.ParseLeanText(run.PlanPath, run.PlanSource) // labels and flags only
	if err != nil {
		return out
	}
	for _, s := range p.AllSteps() {
		for a := s; a != nil; a = a.Parent {
			if a.ContinueOnError {
				out[s.Label] = true
				break
			}
		}
	}
	return out
}

// IsTolerated says whether a record's failure is tolerated (a for_each
// item's by its step's label).
func IsTolerated(tol map[string]bool, label string) bool {
	return tol[label] || tol[engine.BaseLabel(label)]
}

// Names names step visits by their label path: a step in a parallel
// group is "group/label", so two reports of one run agree on who failed
// and a group's child is not taken for a step of its own.
type Names map[string]string

// NamesOf reads the label paths of a run's records.
func NamesOf(recs []board.StepRecord) Names {
	parent, group := map[string]string{}, map[string]bool{}
	for _, r := range recs {
		parent[r.Label] = r.Parent
		if r.Type == "" {
			group[r.Label] = true // a parallel group has no type
		}
	}
	n := Names{}
	for _, r := range recs {
		path := r.Label
		seen := map[string]bool{r.Label: true}
		for p := parent[r.Label]; p != "" && group[p] && !seen[p]; p = parent[p] {
			seen[p] = true
			path = p + "/" + path
		}
		n[r.Label] = path
	}
	return n
}

// Of is a visit's name: its label path, with "#N" from its second visit.
func (n Names) Of(label string, visit int) string {
	if p, ok := n[label]; ok {
		label = p
	}
	return visitName(label, visit)
}

// RepoPath is where a test's file is, as every report of the run says
// it: file as the test runner printed it (relative to the step's dir,
// itself relative to the run's workdir, or absolute), made relative to
// root (the repository's root) when inside it, with forward slashes.
func RepoPath(root, workdir, dir, file string) string {
	if file == "" {
		return ""
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(workdir, dir, file)
	}
	if root == "" {
		return file
	}
	rel, err := filepath.Rel(root, file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return file
	}
	return filepath.ToSlash(rel)
}
