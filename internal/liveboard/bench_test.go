package liveboard

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// BenchmarkPut is puts per second (reported as puts/s) by 1 and 20
// concurrent writers: through a live run's socket, and through the lock
// when no one owns the run (each put takes the lock, loads the board,
// appends one journal line and lets go, as `runner board put` does).
func BenchmarkPut(b *testing.B) {
	for _, via := range []string{"socket", "lock"} {
		for _, writers := range []int{1, 20} {
			b.Run(fmt.Sprintf("%s/writers=%d", via, writers), func(b *testing.B) {
				dir := b.TempDir()
				var path string
				var put func(w, i int) error
				if via == "socket" {
					_, s, p := serve(b, dir, "blackboard.json")
					path = p
					clients := make([]*Client, writers)
					for w := range clients {
						c, err := Dial(s.Socket, path)
						if err != nil {
							b.Fatal(err)
						}
						defer c.Close()
						clients[w] = c
					}
					put = func(w, i int) error {
						_, err := clients[w].Write(WriteRequest{Key: fmt.Sprintf("k%d-%d", w, i), Value: i, Agent: "w"})
						return err
					}
				} else {
					path = filepath.Join(dir, "blackboard.json")
					bb, _ := board.Create(path, board.Run{ID: "bench"}, board.Options{})
					bb.Close()
					put = func(w, i int) error {
						a, err := Open(path, Options{})
						if err != nil {
							return err
						}
						defer a.Close()
						_, err = a.Write(WriteRequest{Key: fmt.Sprintf("k%d-%d", w, i), Value: i, Agent: "w"})
						return err
					}
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for w := 0; w < writers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							if err := put(w, int(i)); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "puts/s")
			})
		}
	}
}

// BenchmarkPutLockGrows is one put through the lock on boards of 1k and
// 10k entries: the put loads the board, so its cost grows with it.
func BenchmarkPutLockGrows(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("board=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "blackboard.json")
			bb, _ := board.Create(path, board.Run{ID: "bench"}, board.Options{})
			for i := 0; i < n; i++ {
				bb.Write(board.WriteOp{Key: fmt.Sprint("pre", i), Value: i, Author: "w", ExpectVersion: -1})
			}
			bb.Save()
			bb.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				a, err := Open(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := a.Write(WriteRequest{Key: fmt.Sprint("k", i), Value: i}); err != nil {
					b.Fatal(err)
				}
				a.Close()
			}
		})
	}
}

// BenchmarkWatchLatency is the time from a put through the socket to the
// line of a watcher (another client) that sees it: p50 and p99.
func BenchmarkWatchLatency(b *testing.B) {
	_, s, path := serve(b, b.TempDir(), "blackboard.json")
	writer, _ := Dial(s.Socket, path)
	watcher, _ := Dial(s.Socket, path)
	got := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watcher.Watch(ctx, Filter{Prefix: "k", After: -1}, func(Change) error {
		got <- time.Now()
		return nil
	})
	time.Sleep(50 * time.Millisecond) // the watch is connected
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := writer.Write(WriteRequest{Key: fmt.Sprint("k", i), Value: i}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
