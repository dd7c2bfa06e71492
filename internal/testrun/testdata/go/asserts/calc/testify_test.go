package calc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTestifyEqual(t *testing.T) {
	assert.Equal(t, 5, Add(2, 2))
}

func TestTestifyMessage(t *testing.T) {
	assert.Equal(t, 5, Add(2, 2), "adding %d and %d", 2, 2)
}

func TestTestifyRequire(t *testing.T) {
	require.NoError(t, errFor(1))
}

func TestTestifyTrue(t *testing.T) {
	assert.True(t, Add(1, 1) == 3)
}

func TestTestifyHelper(t *testing.T) {
	checkSum(t, 1, 2, 4)
}

func checkSum(t *testing.T, a, b, want int) {
	assert.Equal(t, want, Add(a, b))
}

func TestTestifyDeep(t *testing.T) {
	assert.Equal(t, []int{1, 2, 3}, []int{1, 2, 4})
}

type myErr struct{}

func (myErr) Error() string { return "disk on fire" }

func errFor(n int) error {
	if n > 0 {
		return myErr{}
	}
	return nil
}
