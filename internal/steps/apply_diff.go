package steps

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/patch"
)

func init() { add(applyDiffType{}) }

// applyDiffType applies a unified diff to the run's directory, all or
// nothing, tolerating what models get wrong in diffs (see package patch).
type applyDiffType struct{}

// ApplyDiffResult is what an apply_diff step reports.
type ApplyDiffResult struct {
	Files     []patch.FileResult `json:"files"`
	BackupDir string             `json:"backup_dir"` // relative to dir; "" when nothing was written
	Hunks     []patch.HunkResult `json:"hunks"`
	// AlreadyApplied: every change of the diff was already in the files;
	// nothing was written and the step succeeded.
	AlreadyApplied bool `json:"already_applied"`
	// Messages say what was tolerated (recounted hunks, offsets, fuzz).
	Messages []string `json:"messages,omitempty"`
}

type applyDiffStep struct {
	diff     *engine.Template
	diffFile *engine.Template
	dir      *engine.Template
	backup   bool
	keep     int
	check    bool
	strip    int
	reverse  bool
	format   string
	// whole: the diff is written into the plan, which its author wrote
	// whole: it is read as a model's answer that finished normally is
	// (patch.Options.Ended), never as one cut short.
	whole bool
}

func (applyDiffType) Name() string { return "apply_diff" }

// OutputType: the output is text (one line on what happened).
func (applyDiffType) OutputType() any        { return "" }
func (applyDiffType) Result() any            { return ApplyDiffResult{} }
func (applyDiffType) Spec() *engine.TypeSpec { return &applyDiffSpec }

// Caps: the step changes files (ReplayWorld, the default), from the diff
// in its `diff` field.
func (applyDiffType) Caps() engine.Caps { return engine.Caps{Shows: engine.ShowsEdit} }

var applyDiffSpec = engine.TypeSpec{
	Doc: "Applies a unified diff to the run's directory, all or nothing, tolerating what models get wrong " +
		"in diffs (prose around it, wrong hunk counts, offsets, a little fuzz). With format, it applies the other " +
		"edit formats models write: SEARCH/REPLACE blocks, apply_patch envelopes, whole files. Give exactly one of diff and diff_file.",
	Fields: []engine.Field{
		{Name: "diff", Kind: engine.KindTemplate,
			Doc:      "The unified diff (prose and markdown fences around it are tolerated).",
			Examples: []any{"${{ steps.generate.output }}"}},
		{Name: "diff_file", Kind: engine.KindTemplate,
			Doc: "A file holding the diff, instead of diff.", Examples: []any{"fix.patch"}},
		{Name: "dir", Kind: engine.KindTemplate,
			Doc: "The directory the diff's paths are relative to (default the workdir).", Examples: []any{"backend"}},
		{Name: "backup", Kind: engine.KindBool, Default: true,
			Doc: "Keep copies of every touched file under .runner/backups (default true).", Examples: []any{true}},
		{Name: "keep_backups", Kind: engine.KindInt, Default: patch.DefaultKeepBackups, Schema: `{"minimum": 0}`,
			Doc: "How many backups under .runner/backups to keep, the newest: after writing its own, the step removes older ones (0: keep them all). Backups in use by an apply or an undo are never removed.", Examples: []any{50}},
		{Name: "check", Kind: engine.KindBool, Default: false,
			Doc: "true: only check that the diff applies.", Examples: []any{true}},
		{Name: "strip", Kind: engine.KindInt, Schema: `{"minimum": 0}`,
			Doc: "Leading path components to remove (default: detected).", Examples: []any{1}},
		{Name: "reverse", Kind: engine.KindBool, Default: false,
			Doc: "Apply the diff backwards (unified diffs only).", Examples: []any{true}},
		{Name: "format", Kind: engine.KindEnum, Enum: patch.Formats, Default: patch.FormatUnified,
			Doc: "The edit format: unified (a unified diff), search_replace (SEARCH/REPLACE blocks after the file's path), " +
				"apply_patch (*** Begin Patch ... *** End Patch), whole (the file's path, then its whole content in a ``` block), " +
				"or auto: any of these, mixed in one answer (a whole file only when the answer holds no other edit). " +
				"Every format is applied all or nothing, with backups, and refused rather than guessed.",
			Examples: []any{"auto"}},
	},
	Example: `- label: apply
  type: apply_diff
  diff_file: fix.patch
  check: true`,
	Results: []engine.ResultField{
		{Name: "files", Doc: "Each file the diff touched: path, op (modify, create or delete), lines added and removed, new mode."},
		{Name: "backup_dir", Doc: "Where the copies of the touched files are, relative to dir; empty when nothing was written."},
		{Name: "hunks", Doc: "Where each hunk went: file, line, offset from its header, fuzz (context lines ignored)."},
		{Name: "already_applied", Doc: "Every change was already in the files: nothing was written and the step succeeded."},
		{Name: "messages", Doc: "What was tolerated (recounted hunks, offsets, fuzz)."},
	},
}

func (applyDiffType) Decode(d *engine.Decoder) engine.Step {
	s := &applyDiffStep{strip: patch.DetectStrip}
	s.diff = d.Template("diff")
	s.diffFile = d.Template("diff_file")
	if d.Has("diff") == d.Has("diff_file") {
		d.Errorf(nil, "step %q (type apply_diff) needs exactly one of diff and diff_file", d.Label())
	}
	s.dir = d.Template("dir")
	s.backup = d.Bool("backup", true)
	if s.keep = d.Int("keep_backups", patch.DefaultKeepBackups); s.keep < 0 {
		d.Errorf(d.Node("keep_backups"), "keep_backups must be 0 (keep every backup) or more")
	}
	s.check = d.Bool("check", false)
	s.reverse = d.Bool("reverse", false)
	s.format = d.Enum("format", patch.FormatUnified)
	if s.reverse && s.format != patch.FormatUnified {
		d.Errorf(d.Node("reverse"), "reverse applies only to unified diffs, and format is %s", s.format)
	}
	if d.Has("strip") {
		if s.strip = d.Int("strip", 0); s.strip < 0 {
			d.Errorf(d.Node("strip"), "strip must be 0 or more (leading path components to remove)")
		}
	}
	if s.diff != nil {
		// A diff written into the plan is read now: one that cannot apply
		// anywhere is the plan's mistake, not the run's.
		if text, ok := s.diff.Literal(); ok {
			s.whole = true
			if _, err := patch.CheckEnded([]byte(text), s.format); err != nil {
				d.Errorf(d.Node("diff"), "diff: %v", err)
			}
		}
	}
	return s
}

// Describe is what a dry run shows.
func (s *applyDiffStep) Describe() string {
	what := "diff"
	if s.diffFile != nil {
		what = "diff_file " + strings.TrimSpace(s.diffFile.Src)
	}
	if s.format != patch.FormatUnified {
		what += " as " + s.format + " edits"
	}
	if s.check {
		what += " (check only)"
	}
	return "apply " + what
}

func (s *applyDiffStep) Run(ctx context.Context, sc *engine.StepContext) (engine.Result, error) {
	text, err := s.text(sc)
	if err != nil {
		return engine.Result{}, err
	}
	dir, _, err := stepDirEnv(sc, s.dir, nil)
	if err != nil {
		return engine.Result{}, err
	}
	opt := patch.Options{
		Strip:       s.strip,
		Reverse:     s.reverse,
		Check:       s.check,
		NoBackup:    !s.backup,
		BackupID:    fmt.Sprintf("%s/%s-%d", sc.RunID, sc.Label, sc.Visit),
		KeepBackups: s.keep,
		Format:      s.format,
		Ended:       s.whole,
	}
	if s.keep == 0 {
		opt.KeepBackups = patch.KeepAllBackups
	}
	res, err := patch.Apply(ctx, dir, text, opt)
	if err != nil {
		// A refusal's message is written for whoever wrote the diff: it is
		// the step's error as is, ready for the next prompt.
		return engine.Result{Fields: ApplyDiffResult{Files: []patch.FileResult{}, Hunks: []patch.HunkResult{}}}, err
	}
	out := ApplyDiffResult{Files: res.Files, BackupDir: res.BackupDir, Hunks: res.Hunks,
		AlreadyApplied: res.AlreadyApplied, Messages: res.Messages}
	return engine.Result{Output: applySummary(res, s.check), Fields: out}, nil
}

// text is the diff: the template rendered, or the file read.
func (s *applyDiffStep) text(sc *engine.StepContext) ([]byte, error) {
	if s.diff != nil {
		t, err := sc.Eval(s.diff)
		if err != nil {
			return nil, fmt.Errorf("diff: %w", err)
		}
		return []byte(t), nil
	}
	p, err := sc.Eval(s.diffFile)
	if err != nil {
		return nil, fmt.Errorf("diff_file: %w", err)
	}
	rule := ""
	if !filepath.IsAbs(p) {
		p = filepath.Join(sc.Workdir, p)
		rule = fmt.Sprintf(" (a diff_file is relative to the workdir, %s)", sc.Workdir)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("diff_file: %w%s", err, rule)
	}
	defer f.Close()
	// Read one byte past the limit, so that Apply reports the size.
	b, err := io.ReadAll(io.LimitReader(f, patch.DefaultMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("diff_file: %w", err)
	}
	return b, nil
}

// applySummary is the step's output: one line on what happened.
func applySummary(res *patch.Result, check bool) string {
	if res.AlreadyApplied {
		return "already applied: nothing to change"
	}
	verb := "applied"
	if check {
		verb = "would apply"
	}
	var files []string
	for _, f := range res.Files {
		mode := ""
		if f.Mode != "" {
			mode = ", mode " + f.Mode
		}
		files = append(files, fmt.Sprintf("%s %s (+%d -%d%s)", f.Op, f.Path, f.Added, f.Removed, mode))
	}
	return fmt.Sprintf("%s %d hunk(s) to %d file(s): %s", verb, len(res.Hunks), len(res.Files), strings.Join(files, ", "))
}
