package temporal

import (
	"os"
	"testing"
)

// TestMain removes the binaries the dev-server tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}
