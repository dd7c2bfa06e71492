package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

func init() {
	p := os.Getenv("TMP_HEAPPROF")
	if p == "" {
		return
	}
	go func() {
		var max uint64
		var ms runtime.MemStats
		for {
			time.Sleep(20 * time.Millisecond)
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > max+20<<20 {
				max = ms.HeapAlloc
				f, _ := os.Create(p)
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
				os.WriteFile(p+".max", []byte(time.Now().String()), 0o644)
			}
		}
	}()
}
