package replay

import (
	"encoding/json"
	"iter"
	"math"
	"reflect"

	"github.com/planrunner/runner/internal/board"
)

// sameBoard reports whether two boards' entries are equal as their normal
// forms compare them (ids, sequence numbers, times and noise set aside,
// in any order), and how many normal forms it built to tell.
//
// The normal form of an entry is three JSON encodings of it; building it
// for every entry of both boards and sorting them was a fifth of a
// replay, and the fastest-growing part of it (n log n). So the entries
// are compared in place first, field by field, as JSON would see them;
// only the entries that differ in place (parallel steps that finished in
// another order, a field that differs only in noise) get normal forms,
// compared as a multiset: linear, and nothing built when the boards are
// equal in order. Before, the quick comparison asked for the same Go
// types, and a live board's meta holds ints where a loaded one holds
// float64s: it never held for a real replay, whose every entry then went
// the slow way.
func sameBoard(a, b iter.Seq[board.Entry]) (same bool, built int) {
	// One entry of each board at a time: a copy of every entry of both
	// was a third of a 100k-step replay's peak memory.
	next, stop := iter.Pull(b)
	defer stop()
	var left map[string]int // normal form → how many more in a than in b
	for x := range a {
		y, ok := next()
		if !ok {
			return false, built
		}
		if sameEntry(&x, &y) {
			continue
		}
		if left == nil {
			left = map[string]int{}
		}
		left[normalEntry(x)]++
		left[normalEntry(y)]--
		built += 2
	}
	if _, more := next(); more {
		return false, built
	}
	for _, n := range left {
		if n != 0 {
			return false, built
		}
	}
	return true, built
}

// sameEntry is true only when the two entries' normal forms are equal: the
// same fields but the id, sequence number and time, and values equal as
// JSON. False says nothing (the normal forms decide).
func sameEntry(x, y *board.Entry) bool {
	return x.Section == y.Section && x.Role == y.Role && x.Author == y.Author && x.Label == y.Label &&
		x.Key == y.Key && x.Version == y.Version && x.Topic == y.Topic && x.Deleted == y.Deleted &&
		(x.TTL == nil) == (y.TTL == nil) && (x.TTL == nil || sameFloat(*x.TTL, *y.TTL)) &&
		sameJSON(x.Content, y.Content) && sameMeta(x.Meta, y.Meta)
}

func sameMeta(x, y map[string]any) bool {
	if len(x) != len(y) || (x == nil) != (y == nil) {
		// nil and empty encode differently (null, {}); a map of noise
		// alone may still be equal: the normal forms decide.
		return false
	}
	for k, v := range x {
		w, ok := y[k]
		if !ok || !sameJSON(v, w) {
			return false
		}
	}
	return true
}

// sameJSON is true only when x and y encode to the same JSON after a
// decode into plain values: the types a board loaded from its file holds
// (float64, string, bool, nil, []any, map[string]any), and the ints and
// other Go values a live board holds.
func sameJSON(x, y any) bool {
	switch a := x.(type) {
	case nil:
		return y == nil
	case string:
		b, ok := y.(string)
		return ok && a == b
	case bool:
		b, ok := y.(bool)
		return ok && a == b
	case map[string]any:
		b, ok := y.(map[string]any)
		return ok && sameMeta(a, b)
	case []any:
		b, ok := y.([]any)
		if !ok || len(a) != len(b) || (a == nil) != (b == nil) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	if f, ok := jsonNumber(x); ok {
		g, ok := jsonNumber(y)
		return ok && sameFloat(f, g)
	}
	// Another shape (a slice of strings, a struct): equal values of the
	// same type encode alike; anything else, the normal forms decide.
	return y != nil && reflect.TypeOf(x) == reflect.TypeOf(y) && reflect.DeepEqual(x, y)
}

// jsonNumber is a number as its normal form holds it: the float64 its
// JSON decodes to. A float32 is left out: its JSON is written with 32-bit
// precision and decodes to another float64 than the conversion.
func jsonNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// sameFloat is equality of the JSON of two numbers: -0 is written "-0".
func sameFloat(a, b float64) bool {
	return a == b && math.Signbit(a) == math.Signbit(b)
}
