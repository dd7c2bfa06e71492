package patch

import (
	"fmt"
	"os"
	"testing"
)

func TestOne(t *testing.T) {
	b, _ := os.ReadFile("/tmp/dump/p.diff")
	fds, _, err := parse(b, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fds {
		if f.newName != "b/syscall/zsyscall_netbsd_amd64.go" {
			continue
		}
		data, _ := os.ReadFile("/tmp/dump/tree/syscall/zsyscall_netbsd_amd64.go")
		c := splitContent(data)
		fmt.Println("hold", hintsHold(c, f.hunks))
		p := &placer{c: c, hunks: f.hunks, trust: true, exact: make([][]int, len(f.hunks)), done: make([]bool, len(f.hunks))}
		for k, h := range f.hunks {
			old, new := h.sides()
			fmt.Println(k, "oldHint", h.oldHint, "newHint", h.newHint, c.find(old, 0, len(c.text), 0), c.find(new, 0, len(c.text), 0), "upper", p.upper(k, 0))
		}
		pls, fails := placeAll(c, f.hunks, true)
		for _, pl := range pls {
			fmt.Println("placed", pl.h.num, pl.applied, pl.start, pl.end)
		}
		for _, f := range fails {
			fmt.Println("fail", f.h.num, f.where)
		}
	}
}
