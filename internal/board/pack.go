package board

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"
	"unsafe"
)

// The board keeps every entry and step record for the whole run, and
// the small maps it is given were most of what a long run held: a meta
// such as {"visit": 7, "type": "board", "status": "succeeded"} costs
// about 350 bytes as a Go map and 50 as its JSON, and an entry and a
// record are written per step. So a map of plain values (valid UTF-8
// text shorter than BlobMin, whole numbers of type int, booleans, null)
// is kept as its JSON once the entry or record is the board's, and
// built again, with the same Go types, when it is handed out. The JSON
// is the bytes the file holds for it: saving writes them as they are.
// A meta's numbers are all ints or all float64s (what a saved run's
// metas hold once read): its JSON does not say which, the entry does
// (metaFloats).

// packMeta keeps e's meta as its JSON when it holds plain values only.
// Metas alike share their text (a run's step entries differ by visit
// at most).
func (b *Board) packMeta(e *Entry) {
	if e.Meta == nil || e.lazy != nil {
		return
	}
	ok, floats := plainValues(e.Meta)
	if !ok {
		return
	}
	data, err := appendMap(b.packBuf[:0], e.Meta, nil)
	if err != nil {
		return
	}
	b.packBuf = data
	e.packedMeta, e.Meta, e.metaFloats = b.intern(data), nil, floats
}

// packInputs is packMeta for a step record's inputs.
func (b *Board) packInputs(s *StepRecord) {
	if len(s.Inputs) == 0 {
		return
	}
	for k, v := range s.Inputs {
		if len(v) >= BlobMin || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return
		}
	}
	data, err := appendMap(b.packBuf[:0], s.Inputs, nil)
	if err != nil {
		return
	}
	b.packBuf = data
	s.packedInputs, s.Inputs = string(data), nil
}

// internMax bounds the texts intern shares: enough for every distinct
// meta of the steps of a plan, not one per visit of a long loop.
const internMax = 4096

func (b *Board) intern(data []byte) string {
	if s, ok := b.interned[string(data)]; ok {
		return s
	}
	s := string(data)
	if len(b.interned) < internMax {
		if b.interned == nil {
			b.interned = map[string]string{}
		}
		b.interned[s] = s
	}
	return s
}

// plainValues reports whether every value of m is one a packed map
// gives back as it was, and whether its numbers are float64s (false:
// none, or ints). A map with both is not packed.
func plainValues(m map[string]any) (ok, floats bool) {
	ints := false
	for k, v := range m {
		if !utf8.ValidString(k) {
			return false, false
		}
		switch v := v.(type) {
		case nil, bool:
		case string:
			if len(v) >= BlobMin || !utf8.ValidString(v) { // JSON would mend it
				return false, false
			}
		case int:
			if int64(v) > 1<<53 || int64(v) < -(1<<53) { // beyond, a float64 would not hold it exactly
				return false, false
			}
			ints = true
		case float64:
			// JSON gives a finite float64 back exactly (the shortest
			// text that reads as it); NaN and infinities it cannot hold.
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false, false
			}
			floats = true
		default:
			return false, false
		}
	}
	return !(ints && floats), floats
}

// meta is e's meta, built from its JSON if the board packed it.
func (e *Entry) meta() map[string]any {
	if e.packedMeta == "" {
		return e.Meta
	}
	d := packedDec(e.packedMeta)
	v, ok := d.anyValue(0)
	m, isMap := v.(map[string]any)
	if !ok || !isMap {
		// A text with escapes: the fast reader leaves it to encoding/json.
		m = nil
		if err := json.Unmarshal([]byte(e.packedMeta), &m); err != nil || m == nil {
			panic(fmt.Sprintf("board: a meta the board packed does not decode: %v: %s", err, e.packedMeta))
		}
	}
	if e.metaFloats {
		return m
	}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			m[k] = int(f) // every number packed was an int (plainValues)
		}
	}
	return m
}

// unpacked is e with its meta a map again.
func (e Entry) unpacked() Entry {
	if e.packedMeta != "" {
		e.Meta, e.packedMeta, e.metaFloats = e.meta(), "", false
	}
	return e
}

// inputs is s's inputs, built from their JSON if the board packed them.
func (s *StepRecord) inputs() map[string]string {
	if s.packedInputs == "" {
		return s.Inputs
	}
	d := packedDec(s.packedInputs)
	m, ok := d.stringMap()
	if !ok {
		m = nil
		if err := json.Unmarshal([]byte(s.packedInputs), &m); err != nil {
			panic(fmt.Sprintf("board: inputs the board packed do not decode: %v: %s", err, s.packedInputs))
		}
	}
	return m
}

// packedDec reads a packed text in place: the strings it gives share
// its bytes, which nothing ever changes.
func packedDec(s string) lineDec {
	return lineDec{b: unsafe.Slice(unsafe.StringData(s), len(s)), alias: true}
}
