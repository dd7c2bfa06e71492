package runs_test

import (
	"fmt"
	"testing"

	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/testutil/manyruns"
)

// The run list over many saved runs, its index built: all of them, the
// newest page, and a page of a status one run in ten has. 100,000 runs
// take minutes to write and index: -short leaves them out.
//
//	go test ./internal/runs -run '^$' -bench List -benchtime 5x -timeout 60m
func BenchmarkList(b *testing.B) {
	sizes := []int{1000, 10000, 100000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, n := range sizes {
		dir := b.TempDir()
		if err := manyruns.Write(dir, n); err != nil {
			b.Fatal(err)
		}
		if _, err := runs.List(dir); err != nil { // builds the index
			b.Fatal(err)
		}
		queries := []struct {
			name string
			q    runs.Query
			want int
		}{
			{"all", runs.Query{}, n},
			{"page", runs.Query{NewestFirst: true, Limit: 50}, 50},
			{"failed-page", runs.Query{NewestFirst: true, Limit: 50, Status: "failed"}, 50},
		}
		for _, q := range queries {
			b.Run(fmt.Sprintf("runs=%d/%s", n, q.name), func(b *testing.B) {
				for b.Loop() {
					list, _, err := runs.Find(dir, q.q)
					if err != nil || len(list) != q.want {
						b.Fatalf("%d runs, %v; want %d", len(list), err, q.want)
					}
				}
			})
		}
	}
}
