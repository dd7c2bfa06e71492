package board

// StepsShared returns the step records as Steps does, without copying
// them when it need not: a resume hands all of them to the engine once,
// and at 100k steps the copy was 26 MB written (and its pages faulted
// in) to be read once. The records are the board's: the caller must not
// change them. The board only appends records, beyond the slice handed
// out (its capacity is cut to its length, so an append by the caller
// copies), and never changes one it holds; a record holding large
// strings apart (held.go) is built whole, as Steps builds it, and then
// all are copied.
func (b *Board) StepsShared() []StepRecord {
	b.mu.RLock()
	shared := b.steps[:len(b.steps):len(b.steps)]
	for i := range shared {
		if shared[i].held != nil {
			b.mu.RUnlock()
			return b.Steps()
		}
	}
	b.mu.RUnlock()
	return shared
}
