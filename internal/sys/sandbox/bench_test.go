package sandbox

import (
	"os/exec"
	"testing"
)

// BenchmarkStart is the cost of one sandboxed `true` against a plain one
// (docs/benchmarks.md).
func BenchmarkStart(b *testing.B) {
	dir := b.TempDir()
	for _, sandboxed := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "sandboxed"}[sandboxed]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/sh", "-c", "true")
				cmd.Dir = dir
				if sandboxed {
					s, err := Wrap(cmd, Policy{Write: []string{dir}})
					if err != nil {
						b.Fatal(err)
					}
					if err := cmd.Run(); err != nil {
						b.Fatal(err)
					}
					s.Finish(cmd.ProcessState)
					s.Close()
				} else if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
