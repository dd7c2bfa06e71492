package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(1, 2); got != 3 {
		t.Errorf("Add(1, 2) = %d, want 3", got)
	}
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name    string
		a, want int
	}{{"zero", 0, 0}, {"one", 1, 2}} {
		t.Run(c.name, func(t *testing.T) {
			if got := Add(c.a, 0); got != c.want {
				t.Fatalf("Add(%d, 0) = %d, want %d\nsecond line", c.a, got, c.want)
			}
		})
	}
}

func TestSkip(t *testing.T) { t.Skip("not yet") }
func TestOK(t *testing.T)   {}
func TestPanic(t *testing.T) {
	var m map[string]int
	m["x"] = 1
}
