package bigjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Explain is err, an error of decoding data with encoding/json, told to
// a person: where in data it is (line and column) and, for a value of
// the wrong kind, what was found and what was wanted, in JSON's words
// ("a list", "text") rather than Go's types. Any other error is
// returned as it is, as is one that wraps encoding/json's with more to
// say.
func Explain(data []byte, err error) error {
	switch err.(type) {
	case *json.SyntaxError, *json.UnmarshalTypeError:
		return ExplainAt(data, 0, "", err)
	}
	return err
}

// ExplainAt is Explain for an error of decoding the part of data from
// byte at on (one line of a file), saying where it is in the whole of
// data and, unless what is "", what was being decoded. An error that is
// not encoding/json's names the line that part starts on.
func ExplainAt(data []byte, at int, what string, err error) error {
	if what != "" {
		what += ": "
	}
	// Only encoding/json's own: an error wrapping one says more than
	// where it is, and keeps its words.
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Errorf("%s: %s%v", position(data, stop(at, se.Offset, strings.HasPrefix(se.Error(), "unexpected end"))), what, se)
	}
	te, ok := err.(*json.UnmarshalTypeError)
	if !ok {
		return fmt.Errorf("line %d: %s%v", 1+bytes.Count(data[:min(max(at, 0), len(data))], []byte("\n")), what, err)
	}
	found := kindOfValue(te.Value)
	want := kindOfType(te.Type)
	where := position(data, stop(at, te.Offset, false))
	if field := lastField(te.Field); field != "" {
		return fmt.Errorf("%s: %s%q holds %s, want %s", where, what, field, found, want)
	}
	return fmt.Errorf("%s: %s%s, want %s", where, what, found, want)
}

// position is "line L, column C" of the byte at index i of data (past
// its end when i is len(data)).
func position(data []byte, i int) string {
	i = min(max(i, 0), len(data))
	line := 1 + bytes.Count(data[:i], []byte("\n"))
	col := i - bytes.LastIndexByte(data[:i], '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// stop is where an error that encoding/json reports offset bytes into a
// part of data starting at is: the last byte it read (the character
// that is wrong, or the last of a value of the wrong kind), or the end
// when the input ended too soon.
func stop(at int, offset int64, atEnd bool) int {
	if atEnd || offset <= 0 {
		return at + int(max(offset, 0))
	}
	return at + int(offset) - 1
}

// lastField is the JSON name at the end of a decode error's field path
// (the path also names the Go structs a field is embedded through).
func lastField(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// kindOfValue names the JSON value encoding/json describes as v
// ("array", "number 1.5", ...).
func kindOfValue(v string) string {
	switch {
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "string":
		return "text"
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number"):
		if n := strings.TrimSpace(strings.TrimPrefix(v, "number")); n != "" {
			return "the number " + n
		}
		return "a number"
	}
	return v
}

// kindOfType names the JSON values a Go type takes.
func kindOfType(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}
