package engine

import (
	"os"
	"reflect"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

// TestMain fails the package when any test left a field set in noMore,
// the nodeMore every plain node shares: a node must take its own (more,
// copyMore) before setting one, or the field shows on every step. The
// same holds of the plans.StepMore every plain step shares (Own, Copy).
func TestMain(m *testing.M) {
	code := m.Run()
	if !reflect.DeepEqual(*noMore, nodeMore{}) {
		os.Stderr.WriteString("noMore, shared by every plain node, was written to\n")
		code = 1
	}
	if shared := plans.NewStep("", "").StepMore; !reflect.DeepEqual(*shared, plans.StepMore{FailFast: true}) {
		os.Stderr.WriteString("the StepMore shared by every plain step was written to\n")
		code = 1
	}
	os.Exit(code)
}
