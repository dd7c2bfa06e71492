package runs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
)

// RunsDir is where runs started in dir are saved by default: each in
// RunsDir(dir)/<run id>/blackboard.json.
func RunsDir(dir string) string { return filepath.Join(dir, ".runner", "runs") }

// IDOfPath is the run id a board saved at path takes from its place:
// the name of its folder when path is RUNS/<id>/blackboard.json under a
// .runner/runs directory and that name is a run id; "" otherwise. A run
// saved there is listed (and served) under its folder's name, so a run
// started with that path (by `runner serve`, which chooses it) keeps it
// as its own id.
func IDOfPath(path string) string {
	if filepath.Base(path) != "blackboard.json" {
		return ""
	}
	dir := filepath.Dir(path)
	runsDir := filepath.Dir(dir)
	if filepath.Base(runsDir) != "runs" || filepath.Base(filepath.Dir(runsDir)) != ".runner" {
		return ""
	}
	id := filepath.Base(dir)
	if _, ok := board.IDTime(id); !ok {
		return ""
	}
	return id
}

// Latest is the name that stands for the newest run (docs/running.md).
const Latest = "latest"

// Resolve turns what a user gave for a saved run into the path of its
// blackboard.json: a file path (as given), a run directory, or, looked up
// among the runs saved under dir, a run id, a unique prefix of one, or
// "latest" (the newest run: run ids sort by their start). A path that
// names nothing and is no id is returned as given, so the command's own
// error about the missing file stands.
func Resolve(arg, dir string) (string, error) {
	if fi, err := os.Stat(arg); err == nil {
		if fi.IsDir() {
			if p := filepath.Join(arg, "blackboard.json"); exists(p) || exists(liveboard.RemotePath(p)) {
				return p, nil
			}
			return "", fmt.Errorf("%s: a directory without a blackboard.json: give a run's directory, its blackboard.json, a run id or %q", arg, Latest)
		}
		return arg, nil
	}
	// An id never holds a path separator or an extension; anything that
	// does is a path the command reports as missing.
	if arg == "" || strings.ContainsAny(arg, `/\:.`) {
		return arg, nil
	}
	ids, err := runIDs(dir)
	if err != nil {
		return "", err
	}
	if arg == Latest {
		if len(ids) == 0 {
			return "", fmt.Errorf("no runs under %s: %q names the newest run there", RunsDir(dir), Latest)
		}
		return filepath.Join(RunsDir(dir), ids[len(ids)-1], "blackboard.json"), nil
	}
	var match []string
	for _, id := range ids {
		if id == arg {
			match = []string{id}
			break
		}
		if strings.HasPrefix(strings.ToUpper(id), strings.ToUpper(arg)) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("%s: no such file, and no run id under %s starts with it (see `runner runs`)", arg, RunsDir(dir))
	case 1:
		return filepath.Join(RunsDir(dir), match[0], "blackboard.json"), nil
	}
	shown := match
	if len(shown) > 5 {
		shown = append(shown[:5:5], "…")
	}
	return "", fmt.Errorf("%s: %d runs under %s start with it (%s): give more of the id", arg, len(match), RunsDir(dir), strings.Join(shown, ", "))
}

// runIDs lists the run directories under dir, oldest first. A run id is a
// ULID, so its name sorts by its start time.
func runIDs(dir string) ([]string, error) {
	ents, err := os.ReadDir(RunsDir(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		p := filepath.Join(RunsDir(dir), e.Name(), "blackboard.json")
		if e.IsDir() && (exists(p) || exists(liveboard.RemotePath(p))) {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
