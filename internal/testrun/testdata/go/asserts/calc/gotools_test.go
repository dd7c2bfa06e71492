package calc

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestGotools(t *testing.T) {
	assert.Equal(t, Add(2, 2), 5)
}

func TestGotoolsDeep(t *testing.T) {
	assert.DeepEqual(t, []int{1, 2, 3}, []int{1, 2, 4})
}

func TestGotoolsCheck(t *testing.T) {
	assert.Check(t, is.Contains("hello", "z"))
}
