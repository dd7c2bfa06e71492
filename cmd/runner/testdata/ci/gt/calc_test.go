package gt

import "testing"

func TestAdd(t *testing.T) {
	if 2+2 != 5 {
		t.Errorf("want 5, got %d", 2+2)
	}
}

func TestOK(t *testing.T) {}
