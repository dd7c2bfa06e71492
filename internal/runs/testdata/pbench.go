//go:build ignore

// pbench runs each command N times, interleaved, and prints the median
// (min–max) of its CPU time (user + system, from wait4's rusage, in
// microseconds where /usr/bin/time gives hundredths) and of its peak
// memory: the start-up figures of docs/benchmarks.md. A command that
// exits other than 0 stops it: what it measured is not what was asked.
//
//	go run internal/runs/testdata/pbench.go N 'CMD ARGS' 'CMD ARGS'...
package main

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	cmds := os.Args[2:]
	cpu := make([][]float64, len(cmds))
	rss := make([][]float64, len(cmds))
	for i := 0; i < n; i++ {
		for j, c := range cmds {
			f := strings.Fields(c)
			cmd := exec.Command(f[0], f[1:]...)
			cmd.Stdout, cmd.Stderr = nil, nil
			if os.Getenv("PBENCH_SHOW") != "" {
				cmd.Stderr = os.Stderr
			}
			// A figure of a command that failed is no figure of it.
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "pbench: %s: %v\n", c, err)
				os.Exit(1)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			u := time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())
			cpu[j] = append(cpu[j], float64(u)/1e6)
			rss[j] = append(rss[j], float64(ru.Maxrss)/1024)
		}
	}
	for j, c := range cmds {
		fmt.Printf("%-60s CPU %s ms   peak %s MiB\n", c, stat(cpu[j]), stat(rss[j]))
	}
}

func stat(v []float64) string {
	sort.Float64s(v)
	return fmt.Sprintf("%.2f (%.2f–%.2f)", v[len(v)/2], v[0], v[len(v)-1])
}
