package calc

import (
	"testing"

	qt "github.com/frankban/quicktest"
)

func TestQuicktest(t *testing.T) {
	c := qt.New(t)
	c.Assert(Add(2, 2), qt.Equals, 5)
}

func TestQuicktestComment(t *testing.T) {
	c := qt.New(t)
	c.Check(Add(2, 2), qt.Equals, 5, qt.Commentf("sum of %d", 4))
}
