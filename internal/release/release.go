// Package release ties the Temporal module to the root module it is built
// with. temporal/go.mod requires the root module at a commit (a
// pseudo-version) and temporal/go.sum holds that version's hashes, so
// `go install …/temporal/cmd/runner-temporal@vX` builds the worker
// against the very root module the tree holds, as the module proxy serves
// it. The proxy makes a module's zip with `git archive`, which leaves out
// go.work (.gitattributes says export-ignore): the workspace file names
// the pinned version, and changing it does not change the root module.
//
// It may import the standard library and golang.org/x/mod only.
package release

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// Root is the root module's path.
const Root = "github.com/planrunner/runner"

// Pseudo is the pseudo-version of commit rev of the repository at dir,
// as the go command gives it to an untagged commit.
func Pseudo(dir, rev string) (string, error) {
	out, err := git(dir, "log", "-1", "--format=%H %ct", rev)
	if err != nil {
		return "", err
	}
	hash, secs, ok := strings.Cut(strings.TrimSpace(out), " ")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if !ok || err != nil || len(hash) < 12 {
		return "", fmt.Errorf("git log %s: unexpected %q", rev, out)
	}
	return module.PseudoVersion("v0", "", time.Unix(sec, 0), hash[:12]), nil
}

// Zip writes the root module at commit rev of the repository at dir as
// the module proxy serves it for version, with the go.mod it holds there.
func Zip(w io.Writer, dir, version, rev string) (gomod []byte, err error) {
	if err := modzip.CreateFromVCS(w, module.Version{Path: Root, Version: version}, dir, rev, ""); err != nil {
		return nil, err
	}
	out, err := git(dir, "show", rev+":go.mod")
	return []byte(out), err
}

// Sums are the go.sum lines of the root module at commit rev of the
// repository at dir, served as version.
func Sums(dir, version, rev string) ([]string, error) {
	f, err := os.CreateTemp("", "root-*.zip")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	gomod, err := Zip(f, dir, version, rev)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	zipSum, err := dirhash.HashZip(f.Name(), dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	modSum, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	if err != nil {
		return nil, err
	}
	return []string{
		Root + " " + version + " " + zipSum,
		Root + " " + version + "/go.mod " + modSum,
	}, nil
}

// Required is the version of the root module temporal/go.mod requires,
// in the repository at dir.
func Required(dir string) (string, error) {
	path := filepath.Join(dir, "temporal", "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == Root {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", path, Root)
}

// SumLines are the lines of go.sum file path that are of the root module.
func SumLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, Root+" ") {
			out = append(out, l)
		}
	}
	return out, nil
}

// WorkReplaced is the version of the root module go.work at dir maps to
// the tree ("" if none).
func WorkReplaced(dir string) (string, error) {
	path := filepath.Join(dir, "go.work")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseWork(path, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Replace {
		if r.Old.Path == Root {
			return r.Old.Version, nil
		}
	}
	return "", nil
}

// Check reports whether the repository at dir is pinned: temporal/go.mod
// requires the root module at a version whose content is the root module
// of commit rev (HEAD for a clean tree), temporal/go.sum holds its hashes,
// and go.work maps that version to the tree.
func Check(dir, rev string) error {
	v, err := Required(dir)
	if err != nil {
		return err
	}
	want, err := Sums(dir, v, rev)
	if err != nil {
		return err
	}
	have, err := SumLines(filepath.Join(dir, "temporal", "go.sum"))
	if err != nil {
		return err
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		if len(have) == 0 {
			return fmt.Errorf("temporal/go.sum holds no hash of %s %s", Root, v)
		}
		return fmt.Errorf("temporal/go.mod requires %s %s, whose content is not the root module of %s (temporal/go.sum says %q, %s has %q): `go install` of the worker would build it against another root module", Root, v, rev, have, rev, want)
	}
	if w, err := WorkReplaced(dir); err != nil || w != v {
		return fmt.Errorf("go.work maps %s %q to the tree, not %s (%v)", Root, w, v, err)
	}
	return nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}
