package board

// A label or key names one or two entries, mostly (a step's record, its
// write): indexing a 100k-step board allocated a list of one index, then
// of two, for each of them, and a keyState per key, 300k small objects
// that loading a board spent a tenth of its time on. They are cut from
// blocks instead; a list that outgrows its two places is grown by append
// as before (its capacity is capped, so it never writes into its
// neighbour's).
type spare struct {
	ints  []int
	keys  []keyState
	rares []entryRare
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

// rare is a new entryRare, from the block: every entry of a board read
// lazily has one (its line in the file).
func (s *spare) rare() *entryRare {
	if len(s.rares) == 0 {
		s.rares = make([]entryRare, 256)
	}
	r := &s.rares[0]
	s.rares = s.rares[1:]
	return r
}

// fieldIndex lists the entries of each section, author, label, role and
// key, for Query and KeyVersion. Only a query by one of them needs it
// (or a replay serving what a racing read saw), and most runs make none:
// at 100k steps it is about 12 MB. The first such query builds it from
// the entries; from then on every new entry is added to it.
type fieldIndex struct {
	bySection, byAuthor, byLabel, byRole, byKey map[string][]int
}

// indexFields builds the field index if it is not built yet.
func (b *Board) indexFields() {
	b.mu.RLock()
	built := b.fields != nil
	b.mu.RUnlock()
	if built {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fields != nil {
		return
	}
	x := &fieldIndex{bySection: map[string][]int{}, byAuthor: map[string][]int{}, byLabel: map[string][]int{},
		byRole: map[string][]int{}, byKey: map[string][]int{}}
	for i := range b.entries.len() {
		r := b.entries.at(i)
		x.add(r.kind.section, r.kind.author, r.label, r.kind.role, r.key, i, &b.spare)
	}
	b.fields = x
}

// add indexes entry i.
func (x *fieldIndex) add(section, author, label, role, key string, i int, s *spare) {
	x.bySection[section] = append(x.bySection[section], i)
	if author != "" {
		x.byAuthor[author] = append(x.byAuthor[author], i)
	}
	if label != "" {
		x.byLabel[label] = s.add(x.byLabel[label], i)
	}
	if role != "" {
		x.byRole[role] = append(x.byRole[role], i)
	}
	if key != "" {
		x.byKey[key] = s.add(x.byKey[key], i)
	}
}
