//go:build !unix

package runs

import "path/filepath"

// runsDirFD stands for the open runs directory of unix: here each stat
// names the whole path.
type runsDirFD struct{}

func openRunsDir(string) runsDirFD { return runsDirFD{} }

func (runsDirFD) Close() {}

// key is keyOf(runsDir/id/blackboard.json).
func (runsDirFD) key(runsDir, id string) (fileKey, bool) {
	return keyOf(filepath.Join(runsDir, id, "blackboard.json"))
}
