package steps

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/safefs"
	"github.com/planrunner/runner/internal/sys/sandbox"
	"gopkg.in/yaml.v3"
)

// The `sandbox:` field of command and test steps (package sandbox).
var sandboxField = engine.Field{Name: "sandbox", Kind: engine.KindOther,
	Schema: `{"oneOf": [{"enum": ["strict", "optional"]}, {"type": "object", "additionalProperties": false, "properties": {` +
		`"mode": {"enum": ["strict", "optional"], "description": "strict: a kernel that cannot confine the step is an error; optional: the step then runs unconfined, and its result says so.", "examples": ["optional"]}, ` +
		`"network": {"type": "boolean", "description": "true: the host's network (and Unix sockets); default false: only the sandbox's own loopback.", "examples": [true]}, ` +
		`"read": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "Only these paths (with the system's and the writable ones) can be read; needs Landlock. Absent: everything reads.", "examples": [["~/.pyenv", "/srv/data"]]}, ` +
		`"write": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "More writable paths: absolute, ~/..., or relative to the workdir; made if missing.", "examples": [["~/.cache/pip", "out"]]}, ` +
		`"caches": {"type": "array", "items": {"enum": ["go"]}, "description": "Build caches to open, found by asking the tool: go (GOCACHE and GOMODCACHE).", "examples": [["go"]]}}}]}`,
	Doc: "Run confined: write only the workdir, the step's dir, a private TMPDIR and `write` paths, never runner's own files or the run's directory (a dir below it is writable); " +
		"read everything, or only `read` paths and the system's; no network unless `network: true`; no other process " +
		"visible; no privileges to gain. `caches: [go]` opens Go's build and module caches. A kernel that cannot " +
		"is an error, unless `mode: optional`. Paths are absolute, `~/`, or relative to the workdir.",
	Examples: []any{"strict", map[string]any{"caches": []any{"go"}, "network": false},
		map[string]any{"mode": "optional", "write": []any{"~/.cache/pip"}, "read": []any{"~/.pyenv"}}}}

// sandboxSpec is a step's sandbox as the plan gives it; paths are
// resolved when the step runs (the workdir and HOME are known then).
type sandboxSpec struct {
	optional bool
	network  bool
	read     []string // nil: read everything
	write    []string
	goCaches bool
}

var sandboxKeys = []string{"mode", "network", "read", "write", "caches"}

// decodeSandbox reads the sandbox field (nil when absent).
func decodeSandbox(d *engine.Decoder) *sandboxSpec {
	n := d.Node("sandbox")
	if n == nil {
		return nil
	}
	r := d.Reporter()
	sb := &sandboxSpec{}
	mode := func(v *yaml.Node, what string) {
		s, ok := plans.String(r, v, what)
		switch {
		case !ok:
		case s == "optional":
			sb.optional = true
		case s != "strict":
			d.Errorf(v, "%s: %q is not a sandbox mode (strict or optional)%s", what, s, plans.Suggest(s, []string{"strict", "optional"}))
		}
	}
	if n.Kind != yaml.MappingNode {
		mode(n, "sandbox")
		return sb
	}
	paths := func(v *yaml.Node, what string) []string {
		list := plans.StringList(r, v, what)
		for _, p := range list {
			if p == "" || strings.Contains(p, "${{") {
				d.Errorf(v, "%s: %q is not a path (absolute, ~/..., or relative to the workdir; no ${{ }})", what, p)
			}
		}
		if list == nil {
			list = []string{}
		}
		return list
	}
	for _, f := range plans.Fields(r, n, "sandbox") {
		switch f.Key {
		case "mode":
			mode(f.Value, "sandbox.mode")
		case "network":
			sb.network, _ = plans.Bool(r, f.Value, "sandbox.network")
		case "read":
			sb.read = paths(f.Value, "sandbox.read")
		case "write":
			sb.write = paths(f.Value, "sandbox.write")
		case "caches":
			for _, c := range plans.StringList(r, f.Value, "sandbox.caches") {
				if c != "go" {
					d.Errorf(f.Value, "sandbox.caches: unknown cache %q (known: go; give others' paths in sandbox.write)%s", c, plans.Suggest(c, []string{"go"}))
					continue
				}
				sb.goCaches = true
			}
		default:
			plans.Unknown(r, f, "sandbox", sandboxKeys)
		}
	}
	return sb
}

// policy turns the plan's sandbox into what package sandbox applies, for a
// step running in dir with env.
func (sb *sandboxSpec) policy(sc *engine.StepContext, dir string, env []string) (*sandbox.Policy, error) {
	if sb == nil {
		return nil, nil
	}
	p := &sandbox.Policy{Optional: sb.optional, Network: sb.network}
	p.Write = append(p.Write, sc.Workdir, dir)
	// Runner's own files stay out of reach: other runs' boards under the
	// workdir's .runner, this run's directory (read-only: a step that
	// could write it could plant a link where runner is about to make
	// one of its files; a scratch copy in a directory of its own below
	// it stays writable as a step's dir or write path), and its live
	// board's socket (hidden: a read-only file system does not keep a
	// process from connecting to a socket).
	p.ReadOnly = append(p.ReadOnly, filepath.Join(sc.Workdir, ".runner"))
	runDir := ""
	if sc.Board != nil && sc.Board.Path() != "" {
		bb := sc.Board.Path()
		runDir = filepath.Dir(bb)
		p.ReadOnly = append(p.ReadOnly, runDir, bb, board.JournalPath(bb), boardlock.LockPath(bb))
		p.Hide = append(p.Hide, bb+".sock")
		if o, err := boardlock.ReadOwner(bb); err == nil && o.Socket != "" {
			p.Hide = append(p.Hide, o.Socket) // a private one, for a long path
		}
	}
	home, _ := os.UserHomeDir()
	if v := envValue(env, "HOME"); v != "" {
		home = v
	}
	resolve := func(what, p string) (string, error) {
		switch {
		case p == "~" || strings.HasPrefix(p, "~/"):
			if home == "" {
				return "", fmt.Errorf("sandbox.%s: %s: HOME is not set", what, p)
			}
			return filepath.Join(home, p[1:]), nil
		case filepath.IsAbs(p):
			return filepath.Clean(p), nil
		}
		return filepath.Join(sc.Workdir, p), nil
	}
	for _, w := range sb.write {
		r, err := resolve("write", w)
		if err != nil {
			return nil, err
		}
		// A cache or output directory not made yet is made, as the step
		// would have; never through a link: in the workdir, where an
		// earlier step could have planted one, none below it is
		// followed, elsewhere none that MkdirAll makes.
		base := ""
		if under(r, sc.Workdir) {
			base = sc.Workdir
		}
		if err := safefs.MkdirAll(base, r, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox.write: %w", err)
		}
		p.Write = append(p.Write, r)
	}
	if sb.read != nil {
		p.Read = []string{}
		for _, rd := range sb.read {
			r, err := resolve("read", rd)
			if err != nil {
				return nil, err
			}
			if _, err := os.Stat(r); err != nil {
				return nil, fmt.Errorf("sandbox.read: %w", err)
			}
			p.Read = append(p.Read, r)
		}
	}
	if sb.goCaches {
		dirs, err := goCaches(dir, env)
		if err != nil {
			return nil, err
		}
		p.Write = append(p.Write, dirs...)
		if p.Read != nil {
			root, err := goEnv(dir, env, "GOROOT")
			if err != nil {
				return nil, err
			}
			p.Read = append(p.Read, root...)
		}
	}
	p.Write = dedupe(p.Write)
	if err := runDirNotWritable(runDir, p.Write); err != nil {
		return nil, err
	}
	return p, nil
}

// runDirNotWritable refuses a run's directory that is one of the step's
// writable paths (the workdir, when --out puts blackboard.json there):
// no read-only mount can keep runner's files in it from the step then.
// One inside a writable path is mounted read-only (policy's ReadOnly).
func runDirNotWritable(runDir string, write []string) error {
	if runDir == "" {
		return nil
	}
	rd := realPath(runDir)
	for _, w := range write {
		if realPath(w) == rd {
			return fmt.Errorf("sandbox: the run's directory %s is a path the step may write (workdir, dir or sandbox.write); runner keeps its own files there (blackboard.json, its journal and lock), out of a step's reach: give --out a directory of its own", runDir)
		}
	}
	return nil
}

// realPath is p absolute with its links resolved, as the kernel sees it.
func realPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// recorded is what a step's result keeps of its sandbox: how it was
// confined, and the paths as the plan gives them. The host's paths (the
// workdir, the run's directory, the caches) differ from run to replay and
// from machine to machine; the rule that opens them is the same.
func (sb *sandboxSpec) recorded(r *sandbox.Report) *sandbox.Report {
	if sb == nil || r == nil {
		return r
	}
	c := *r
	c.Write, c.Read, c.Caches = sb.write, sb.read, nil
	if sb.goCaches {
		c.Caches = []string{"go"}
	}
	return &c
}

// under reports whether p is dir or below it, by their names.
func under(p, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	out := list[:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// goCaches asks the go command where its build and module caches are (as
// the step's environment sets them), making them if need be.
func goCaches(dir string, env []string) ([]string, error) {
	dirs, err := goEnv(dir, env, "GOCACHE", "GOMODCACHE")
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := safefs.MkdirAll("", d, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox.caches: go: %w", err)
		}
	}
	return dirs, nil
}

func goEnv(dir string, env []string, names ...string) ([]string, error) {
	cmd := exec.Command("go", append([]string{"env"}, names...)...)
	cmd.Dir, cmd.Env = dir, env
	if path := envValue(env, "PATH"); path != "" {
		// exec.Command looked go up on runner's PATH; the step's counts.
		if lp, err := lookPathIn("go", path); err == nil {
			cmd.Path = lp
		}
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox.caches: go: asking `go env %s`: %w", strings.Join(names, " "), err)
	}
	var dirs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "off" {
			continue
		}
		dirs = append(dirs, l)
	}
	return dirs, nil
}

func lookPathIn(name, path string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v = s // the last one wins, as in exec
		}
	}
	return v
}

// describe is the dry run's note on the sandbox.
func (sb *sandboxSpec) describe() string {
	if sb == nil {
		return ""
	}
	d := " (sandbox"
	if sb.optional {
		d += " optional"
	}
	if sb.network {
		d += ", network"
	}
	return d + ")"
}

// warnUnconfined says in the log that an optional sandbox was not there.
func warnUnconfined(sc *engine.StepContext, rep *sandbox.Report) {
	if rep != nil && !rep.Active {
		sc.Log.Warn().Str("missing", rep.Missing).Msg("sandbox: optional: the step ran unconfined")
	}
}
