package board

import "time"

// entryRow is an entry as the board keeps it. An Entry is 216 bytes and
// its id 32 more, and a run keeps one or two per step: at 100k steps
// they were a fifth of what the run held. Its seq is its place, its id
// (a NewID one) 16 bytes, its time an instant; its section, role,
// author and topic sit behind one pointer that entries alike share, and
// what few entries have (a TTL, a meta that is not packed, an id or a
// time said another way, a content not decoded yet) behind another: 112
// bytes. The entry is built again when it is handed out (entry).
type entryRow struct {
	kind    *entryKind
	label   string
	key     string
	id      ulid
	ts      instant
	version int64
	content any
	meta    string // packed (pack.go)
	rare    *entryRare
}

// entryKind is what many entries share: their section, role, author and
// topic, and whether they delete their key and hold float meta numbers.
type entryKind struct {
	section, role, author, topic string
	deleted, metaFloats          bool
}

// entryRare holds what few entries have.
type entryRare struct {
	id    string // an id that is no ulid; "" when the row's id holds it
	ts    time.Time
	times bool // ts holds the time: it is no instant
	ttl   *float64
	meta  map[string]any // a meta that could not be packed
}

// kindsMax bounds the kinds a board shares: enough for every section,
// role and author of a plan; an entry of another kind past it has its
// own.
const kindsMax = 4096

// addEntry adds e (packed, numbered) to the rows: filled in place, as a
// row copied in cost a tenth of loading a saved run.
func (b *Board) addEntry(e *Entry) {
	if f := b.entries.file; f != nil && f.n < len(f.lines) && e.lazy == &f.lines[f.n] {
		f.n++ // read from the file and left there (LoadLean)
		return
	}
	b.fillRow(b.entries.next(), e)
}

// fillRow sets r, a zero row, to e as the board keeps it.
func (b *Board) fillRow(r *entryRow, e *Entry) {
	k := entryKind{e.Section, e.Role, e.Author, e.Topic, e.Deleted, e.metaFloats}
	kind := b.lastKind
	if kind == nil || *kind != k { // entries come in runs of one kind: no hashing then
		kind = b.entryKinds[k]
	}
	if kind == nil {
		kind = new(entryKind)
		*kind = k // k itself stays on the stack: most entries share a kind
		if b.entryKinds == nil {
			b.entryKinds = map[entryKind]*entryKind{}
		}
		if len(b.entryKinds) < kindsMax {
			b.entryKinds[k] = kind
		}
	}
	b.lastKind = kind
	setRow(r, e, kind, &b.spare)
}

// setRow sets r, a zero row, to e, of kind; the part of a row few rows
// have comes from x, or is allocated when x is nil.
func setRow(r *entryRow, e *Entry, kind *entryKind, x *spare) {
	r.label, r.key, r.version, r.content, r.meta = e.Label, e.Key, e.Version, e.Content, e.packedMeta
	if e.lazy != nil {
		r.content = e.lazy // its content is not decoded: where it is instead
	}
	r.kind = kind
	id, okID := ulidOf(e.ID)
	ts, okTS := instantOf(e.TS)
	r.id, r.ts = id, ts
	if !okID || !okTS || e.TTL != nil || e.Meta != nil {
		if x != nil {
			r.rare = x.rare()
		} else {
			r.rare = new(entryRare)
		}
		r.rare.ttl, r.rare.meta = e.TTL, e.Meta
		if !okID {
			r.rare.id = e.ID
		}
		if !okTS {
			r.rare.ts, r.rare.times = e.TS, true
		}
	}
}

// entry is row i as an Entry, its meta packed still and its content
// perhaps not decoded (loaded gives both).
func (r *entryRow) entry(i int) Entry {
	k := r.kind
	e := Entry{ID: r.id.String(), Seq: int64(i) + 1, Section: k.section, Role: k.role, Author: k.author,
		Label: r.label, Key: r.key, Version: r.version, Topic: k.topic, Content: r.content,
		TS: r.ts.time(), Deleted: k.deleted, metaFloats: k.metaFloats, packedMeta: r.meta}
	if lz := r.lazy(); lz != nil {
		e.Content, e.lazy = nil, lz
	}
	if x := r.rare; x != nil {
		if x.id != "" {
			e.ID = x.id
		}
		if x.times {
			e.TS = x.ts
		}
		e.TTL, e.Meta = x.ttl, x.meta
	}
	return e
}

// lazy is where the row's content is when it is not decoded (a board
// read lazily, store_lazy.go): a row of its own, not a rare part, as
// every entry of such a board has one.
func (r *entryRow) lazy() *lazyEntry {
	lz, _ := r.content.(*lazyEntry)
	return lz
}

// loaded is row i as Entry.loaded gives it.
func (r *entryRow) loaded(i int) Entry {
	e := r.entry(i)
	return e.loaded()
}

func (r *entryRow) ttl() *float64 {
	if r.rare == nil {
		return nil
	}
	return r.rare.ttl
}

func (r *entryRow) time() time.Time {
	if r.rare != nil && r.rare.times {
		return r.rare.ts
	}
	return r.ts.time()
}

// gone reports whether the row deletes its key or has expired at now.
func (r *entryRow) gone(now time.Time) bool {
	if r.kind.deleted {
		return true
	}
	ttl := r.ttl()
	return ttl != nil && now.Sub(r.time()) >= time.Duration(*ttl*float64(time.Second))
}

// hasID reports whether the row's id is id.
func (r *entryRow) hasID(id string, asULID ulid, isULID bool) bool {
	if r.rare != nil && r.rare.id != "" {
		return r.rare.id == id
	}
	return isULID && r.id == asULID
}

// ulid is a NewID id as its 128 bits: 26 characters of Crockford base32,
// the first at most 7, are 130 bits less two. The zero ulid, which no id
// is in practice, is the id "" or one kept in the row's entryRare.
type ulid struct{ hi, lo uint64 }

// ulidOf is id as a ulid, when it is the text of one exactly.
func ulidOf(id string) (ulid, bool) {
	if len(id) != 26 {
		return ulid{}, false
	}
	var u ulid
	for i := 0; i < 26; i++ {
		d := crockfordValue[id[i]]
		if d < 0 || i == 0 && d > 7 {
			return ulid{}, false
		}
		u.hi = u.hi<<5 | u.lo>>59
		u.lo = u.lo<<5 | uint64(d)
	}
	return u, u != ulid{}
}

// crockfordValue is each byte's value as a digit of crockford; -1 for
// one that is none.
var crockfordValue = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := range len(crockford) {
		t[crockford[i]] = int8(i)
	}
	return t
}()

// String is u's text.
func (u ulid) String() string {
	if u == (ulid{}) {
		return ""
	}
	var b [26]byte
	for i := 25; i >= 0; i-- {
		b[i] = crockford[u.lo&31]
		u.lo = u.lo>>5 | u.hi<<59
		u.hi >>= 5
	}
	return string(b[:])
}

// entryRows are the rows in chunks, as stepRows are.
// A board read by LoadLean keeps the entries read from its file there
// (file, store_leansteps.go); the rows are the entries added after them.
type entryRows struct {
	file   *fileEntries
	chunks [][]entryRow
	n      int
}

func (rs *entryRows) len() int { return rs.file.len() + rs.n }

// at is row i; for an entry left in the file, a row made from its line.
func (rs *entryRows) at(i int) *entryRow {
	n := rs.file.len()
	if i < n {
		return rs.file.row(i)
	}
	i -= n
	return &rs.chunks[i/rowChunk][i%rowChunk]
}

// entry is entry i as entryRow.entry gives it; one left in the file is
// only where it is (its header is read with its content, once).
func (rs *entryRows) entry(i int) Entry {
	if i < rs.file.len() {
		return Entry{Seq: int64(i) + 1, lazy: &rs.file.lines[i]}
	}
	return rs.at(i).entry(i)
}

// next adds a zero row and returns it.
func (rs *entryRows) next() *entryRow {
	if rs.n%rowChunk == 0 {
		rs.chunks = append(rs.chunks, make([]entryRow, rowChunk))
	}
	r := &rs.chunks[len(rs.chunks)-1][rs.n%rowChunk]
	rs.n++
	return r
}
