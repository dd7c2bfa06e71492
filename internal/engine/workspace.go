package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

// Reading the workspace from expressions: files(pattern) and
// read_file(path), inside the run's workdir only. What they give depends
// on the world, so each call is recorded (kind workspace, numbered per
// step visit) and a replay takes the recorded answer.

// KindWorkspace is a files() or read_file() call: Request is a
// WorkspaceCall, Response a WorkspaceAnswer.
const KindWorkspace = "workspace"

// EmptyFiles lists, by step visit ("label#visit"), the files() patterns
// of recs that matched nothing: what a reader of the run should see,
// since a step over no files succeeds.
func EmptyFiles(recs []board.Recording) map[string][]string {
	out := map[string][]string{}
	for _, rec := range recs {
		if rec.Kind != KindWorkspace {
			continue
		}
		var call WorkspaceCall
		var ans WorkspaceAnswer
		if json.Unmarshal(rec.Request, &call) != nil || call.Func != "files" || json.Unmarshal(rec.Response, &ans) != nil || ans.Error != "" {
			continue
		}
		if list, _ := ans.Value.([]any); len(list) == 0 {
			k := fmt.Sprintf("%s#%d", rec.Label, rec.Visit)
			out[k] = append(out[k], call.Arg)
		}
	}
	return out
}

// MaxFiles is the most paths files() gives; more is an error that says
// to narrow the pattern.
const MaxFiles = 10_000

// maxWalk bounds the entries files() looks at, matched or not.
const maxWalk = 200_000

// WorkspaceCall is what a workspace function was asked.
type WorkspaceCall struct {
	Func string `json:"func"`
	Arg  string `json:"arg"`
}

// WorkspaceAnswer is what it gave: a value or an error.
type WorkspaceAnswer struct {
	Value any    `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

// WorkspaceScript is what a replay's Script may add: the recorded answer
// of the call-th workspace call of a step visit.
type WorkspaceScript interface {
	Workspace(label string, visit, call int) (board.Recording, bool)
}

var workspaceTypes = types.Map{
	// files(pattern): the workdir's regular files matching a glob (** for
	// any depth), sorted, relative, with / between names.
	"files": types.TypeOf(func(string) ([]any, error) { return nil, nil }),
	// read_file(path): a file of the workdir as text, up to 1 MiB.
	"read_file": types.TypeOf(func(string) (string, error) { return "", nil }),
}

// outsideStep are the workspace functions where no step visit is
// evaluating (the plan's env): refused, as nothing would record them.
var outsideStep = map[string]any{
	"files": func(string) ([]any, error) {
		return nil, errors.New("files() reads the workspace for a step: use it in a step's fields")
	},
	"read_file": func(string) (string, error) {
		return "", errors.New("read_file() reads the workspace for a step: use it in a step's fields")
	},
}

// workspaceFuncs are files and read_file for a step visit.
func (r *Runner) workspaceFuncs(label string, visit int, vc *visitClock) {
	vc.files = func(pattern string) ([]any, error) {
		v, err := r.workspace(label, visit, "files", pattern)
		if err != nil {
			return nil, err
		}
		list, _ := v.([]any)
		if list == nil {
			list = []any{}
		}
		if len(list) == 0 {
			// Most often a run started from another directory than the
			// plan's author meant: say so, or a step "succeeds" over
			// nothing. A log line, not a board entry: a replay gives the
			// same answer from the recording and so the same warning.
			l := r.logger(label)
			l.Warn().Int("visit", visit).Str("workdir", r.Workdir).Msgf("files(%q) matched nothing in the workdir", pattern)
		}
		return list, nil
	}
	vc.readFile = func(p string) (string, error) {
		v, err := r.workspace(label, visit, "read_file", p)
		s, _ := v.(string)
		return s, err
	}
}

// workspace runs one workspace call of a step visit: served from the
// recording in a replay, else done here (inside Runner.Workspace, which
// on Temporal keeps its answer in the workflow's history), and recorded.
func (r *Runner) workspace(label string, visit int, fn, arg string) (any, error) {
	k := visitKey{label, visit}
	r.mu.Lock()
	r.wsN[k]++
	n := r.wsN[k]
	r.mu.Unlock()
	req, _ := json.Marshal(WorkspaceCall{Func: fn, Arg: arg})
	var raw json.RawMessage
	if s, ok := r.Script.(WorkspaceScript); ok && r.Script != nil {
		if rec, ok := s.Workspace(label, visit, n); ok {
			if !bytes.Equal(rec.Request, req) {
				return nil, fmt.Errorf("replay: the recording has %s here, not %s(%q)", describeCall(rec.Request), fn, arg)
			}
			raw = rec.Response
		}
	}
	if raw == nil {
		read := func() (json.RawMessage, error) {
			var ans WorkspaceAnswer
			var err error
			if fn == "files" {
				ans.Value, err = Files(r.Workdir, arg)
			} else {
				ans.Value, err = ReadFile(r.Workdir, arg)
			}
			if err != nil {
				ans = WorkspaceAnswer{Error: err.Error()}
			}
			return json.Marshal(ans)
		}
		var err error
		if r.Workspace != nil {
			raw, err = r.Workspace(WorkspaceCall{Func: fn, Arg: arg}, read)
		} else {
			raw, err = read()
		}
		if err != nil {
			return nil, err
		}
	}
	if err := r.Board.AddRecording(board.Recording{Label: label, Visit: visit, Kind: KindWorkspace, Call: n, Request: req, Response: raw}); err != nil {
		return nil, err
	}
	var ans WorkspaceAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("%s(%q): the recorded answer: %w", fn, arg, err)
	}
	if ans.Error != "" {
		return nil, errors.New(ans.Error)
	}
	return ans.Value, nil
}

func describeCall(raw json.RawMessage) string {
	var c WorkspaceCall
	if json.Unmarshal(raw, &c) != nil {
		return "another call"
	}
	return fmt.Sprintf("%s(%q)", c.Func, c.Arg)
}

// checkRelative refuses a path or pattern that is absolute or climbs out
// with "..": the workspace functions read the workdir only.
func checkRelative(fn, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%s: the path is empty", fn)
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`):
		return fmt.Errorf("%s(%q): an absolute path; give one relative to the workdir", fn, p)
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return fmt.Errorf("%s(%q): \"..\" leaves the workdir; give a path inside it", fn, p)
		}
	}
	return nil
}

// Files lists the regular files under dir matching pattern: path.Match
// for each name, ** for any number of directories. Sorted, relative, /
// between names; .git is not looked into; a symbolic link is listed only
// when it stays inside dir.
func Files(dir, pattern string) ([]any, error) {
	fn := "files"
	if err := checkRelative(fn, pattern); err != nil {
		return nil, err
	}
	pattern = path.Clean(filepath.ToSlash(pattern))
	if _, err := path.Match(strings.ReplaceAll(pattern, "**", "*"), ""); err != nil {
		return nil, fmt.Errorf("files(%q): a bad pattern: %v", pattern, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("files(%q): %w", pattern, err)
	}
	defer root.Close()
	var out []string
	walked := 0
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if walked++; walked > maxWalk {
			return fmt.Errorf("files(%q): the workdir has more than %d entries to look at; narrow the pattern", pattern, maxWalk)
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !globMatch(pattern, p) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			fi, err := root.Stat(p) // follows the link, refusing one that leaves the root
			if err != nil || !fi.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		if out = append(out, p); len(out) > MaxFiles {
			return fmt.Errorf("files(%q) matches more than %d files; narrow the pattern", pattern, MaxFiles)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	list := make([]any, len(out))
	for i, p := range out {
		list[i] = p
	}
	return list, nil
}

// globMatch matches a slash-separated path against a pattern whose
// elements are path.Match patterns or ** (any number of elements).
func globMatch(pattern, name string) bool {
	return matchParts(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchParts(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchParts(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// ReadFile reads a regular file of dir as text, up to 1 MiB
// (readlimit.Small); a symbolic link that leaves dir is refused.
func ReadFile(dir, p string) (string, error) {
	fn := "read_file"
	if err := checkRelative(fn, p); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("%s(%q): %w", fn, p, err)
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(p))
	if err != nil {
		if strings.Contains(err.Error(), "escapes") {
			return "", fmt.Errorf("%s(%q): a symbolic link out of the workdir", fn, p)
		}
		return "", fmt.Errorf("%s(%q): %w", fn, p, errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s(%q): %w", fn, p, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s(%q): not a regular file", fn, p)
	}
	data, err := readlimit.All(f, fmt.Sprintf("%s(%q)", fn, p), readlimit.Small)
	if err != nil {
		return "", err
	}
	return string(data), nil
}
