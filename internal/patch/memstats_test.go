package patch

import "runtime"

type runtimeMem struct{ bytes uint64 }

func (m *runtimeMem) read() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.bytes = ms.TotalAlloc
}
