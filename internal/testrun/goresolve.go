package testrun

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// goResolver turns the file names go test prints into paths relative to the
// run's directory: t.Error prints a base name ("calc_test.go:12"), which the
// package's import path and go.mod's module path place; a goroutine trace
// prints absolute paths.
type goResolver struct {
	dir     string // the run's directory, absolute
	modRoot string
	modPath string
}

func newGoResolver(dir string) *goResolver {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	r := &goResolver{dir: abs}
	if gomod := findUp(abs, "go.mod"); gomod != "" {
		r.modRoot = filepath.Dir(gomod)
		r.modPath = modulePath(gomod)
	}
	return r
}

func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// pkgDir is the directory of package pkg of the module, or "".
func (r *goResolver) pkgDir(pkg string) string {
	if r.modPath == "" {
		return ""
	}
	sub, ok := strings.CutPrefix(pkg, r.modPath)
	if !ok || sub != "" && sub[0] != '/' {
		return ""
	}
	return filepath.Join(r.modRoot, filepath.FromSlash(sub))
}

// pkgExists says whether a base name is a file of package pkg; nil when
// the package's directory is unknown.
func (r *goResolver) pkgExists(pkg string) func(string) bool {
	if d := r.pkgDir(pkg); d != "" {
		return existsIn(d)
	}
	return nil
}

// file places a base name printed by a test of package pkg.
func (r *goResolver) file(pkg, name string) string {
	if name == "" || filepath.IsAbs(name) {
		return r.rel(name)
	}
	d := r.pkgDir(pkg)
	if d == "" || strings.Contains(name, "/") {
		return name
	}
	p := filepath.Join(d, name)
	if _, err := os.Stat(p); err != nil {
		return name
	}
	return r.rel(p)
}

// rel makes a path relative to the run's directory when it lies inside it.
func (r *goResolver) rel(p string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	if rel, err := filepath.Rel(r.dir, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// inside says whether an absolute path from a trace belongs to the project
// (its module, or the run's directory) rather than to Go or a dependency.
func (r *goResolver) inside(p string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	for _, root := range []string{r.modRoot, r.dir} {
		if root != "" && strings.HasPrefix(p, root+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// trimStack drops the frames of goroutine traces that are not the
// project's (runtime, testing, dependencies), and the goroutines left with
// none, so an excerpt shows the panic and the project's own frames.
func (r *goResolver) trimStack(in []string) []string {
	out := make([]string, 0, len(in))
	for i := 0; i < len(in); i++ {
		l := in[i]
		if strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, ":") {
			if !r.traceHasProject(in[i+1:]) {
				for i+1 < len(in) && strings.TrimSpace(in[i+1]) != "" {
					i++
				}
				continue
			}
			out = append(out, l)
			continue
		}
		if i+1 < len(in) && !strings.HasPrefix(l, "\t") {
			if file, line, ok := goFrameAt(in[i+1]); ok {
				if r.inside(file) {
					out = append(out, l, "\t"+r.rel(file)+":"+strconv.Itoa(line))
				}
				i++
				continue
			}
		}
		out = append(out, l)
	}
	return out
}

// traceHasProject says whether the goroutine trace at the start of in has a
// frame of the project.
func (r *goResolver) traceHasProject(in []string) bool {
	for _, l := range in {
		if strings.TrimSpace(l) == "" {
			return false
		}
		if file, _, ok := goFrameAt(l); ok && r.inside(file) {
			return true
		}
	}
	return false
}
