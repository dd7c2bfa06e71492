package board

// A label or key names one or two entries, mostly (a step's record, its
// write): indexing a 100k-step board allocated a list of one index, then
// of two, for each of them, and a keyState per key, 300k small objects
// that loading a board spent a tenth of its time on. They are cut from
// blocks instead; a list that outgrows its two places is grown by append
// as before (its capacity is capped, so it never writes into its
// neighbour's).
type spare struct {
	ints []int
	keys []keyState
}

// add appends i to an index list, a new list taking its first two
// places from the block.
func (s *spare) add(list []int, i int) []int {
	if list != nil {
		return append(list, i)
	}
	if len(s.ints) < 2 {
		s.ints = make([]int, 2048)
	}
	list = s.ints[:1:2]
	s.ints = s.ints[2:]
	list[0] = i
	return list
}

// keyState is a new key's state, from the block.
func (s *spare) keyState() *keyState {
	if len(s.keys) == 0 {
		s.keys = make([]keyState, 256)
	}
	ks := &s.keys[0]
	s.keys = s.keys[1:]
	return ks
}
