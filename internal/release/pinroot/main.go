// Command pinroot makes the Temporal module require the root module at
// the commit checked out (HEAD), with that version's hashes in
// temporal/go.sum and go.work mapping it to the tree. Run it from a clean
// tree after committing a change to the root module, then commit what it
// changed:
//
//	go run ./internal/release/pinroot && git commit -am "temporal: require the root module as it is now"
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/planrunner/runner/internal/release"
)

func main() {
	if err := pin(); err != nil {
		fmt.Fprintln(os.Stderr, "pinroot:", err)
		os.Exit(1)
	}
}

// pinFiles are the files pinroot writes; any other change must be
// committed first, or HEAD would not be the root module of the tree.
var pinFiles = []string{"temporal/go.mod", "temporal/go.sum", "go.work"}

func pin() error {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return fmt.Errorf("not in a git checkout: %v", err)
	}
	dir := strings.TrimSpace(string(top))
	status, err := exec.Command("git", "-C", dir, "status", "--porcelain").Output()
	if err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimRight(string(status), "\n"), "\n") {
		if len(l) > 3 && !slices.Contains(pinFiles, l[3:]) {
			return fmt.Errorf("%s is not committed: commit the root module's changes first", l[3:])
		}
	}
	v, err := release.Pseudo(dir, "HEAD")
	if err != nil {
		return err
	}
	sums, err := release.Sums(dir, v, "HEAD")
	if err != nil {
		return err
	}

	modPath := filepath.Join(dir, "temporal", "go.mod")
	data, err := os.ReadFile(modPath)
	if err != nil {
		return err
	}
	mf, err := modfile.Parse(modPath, data, nil)
	if err != nil {
		return err
	}
	if err := mf.AddRequire(release.Root, v); err != nil {
		return err
	}
	if data, err = mf.Format(); err != nil {
		return err
	}
	if err := os.WriteFile(modPath, data, 0o644); err != nil {
		return err
	}

	sumPath := filepath.Join(dir, "temporal", "go.sum")
	if data, err = os.ReadFile(sumPath); err != nil {
		return err
	}
	// The root module's lines go where go.sum orders them (by module
	// path); the others keep the go command's order.
	var lines []string
	at := -1
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		path, _, _ := strings.Cut(l, " ")
		switch {
		case l == "" || path == release.Root:
			continue
		case at < 0 && path > release.Root:
			at = len(lines)
		}
		lines = append(lines, l)
	}
	if at < 0 {
		at = len(lines)
	}
	lines = slices.Insert(lines, at, sums...)
	if err := os.WriteFile(sumPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}

	workPath := filepath.Join(dir, "go.work")
	if data, err = os.ReadFile(workPath); err != nil {
		return err
	}
	re := regexp.MustCompile(`(?m)^replace ` + regexp.QuoteMeta(release.Root) + ` \S+ => \./$`)
	if !re.Match(data) {
		return fmt.Errorf("%s has no line `replace %s VERSION => ./`", workPath, release.Root)
	}
	data = re.ReplaceAll(data, []byte("replace "+release.Root+" "+v+" => ./"))
	if err := os.WriteFile(workPath, data, 0o644); err != nil {
		return err
	}
	fmt.Printf("temporal requires %s %s\n", release.Root, v)
	return nil
}
