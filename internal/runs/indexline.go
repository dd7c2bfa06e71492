package runs

import (
	"encoding/json"
	"math"
	"unicode/utf8"
)

// decodeEntry decodes one line of the run index. A listing decodes a line
// per run it shows, so the lines json.Marshal writes (no spaces, no
// escapes, no usage) are read field by field here; any other line, or
// anything unexpected in one, goes to encoding/json, which decides.
func decodeEntry(line []byte) (indexEntry, bool) { return decodeEntryWith(line, nil) }

// decodeEntryWith is decodeEntry taking the line's strings from in.
func decodeEntryWith(line []byte, in interner) (indexEntry, bool) {
	if e, ok := fastEntry(line, in); ok {
		return e, true
	}
	var e indexEntry
	if json.Unmarshal(line, &e) != nil {
		return indexEntry{}, false
	}
	return e, true
}

// interner holds the strings a listing has decoded: a hundred thousand
// runs of a few plans hold a few plan paths, names and statuses, kept
// once rather than once per run. nil: none kept.
type interner map[string]string

func (in interner) str(b []byte) string {
	if in == nil {
		return string(b)
	}
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// fastEntry reads the lines json.Marshal writes of an indexEntry without
// usage; false for any other, whole or not.
func fastEntry(p []byte, in interner) (e indexEntry, ok bool) {
	if len(p) < 2 || p[0] != '{' {
		return e, false
	}
	p = p[1:]
	var seen uint16
	for {
		var key, str []byte
		if key, p, ok = jsonString(p); !ok || len(p) == 0 || p[0] != ':' {
			return e, false
		}
		p = p[1:]
		var bit uint16
		switch string(key) {
		case "v":
			bit = 1 << 0
			var n int64
			n, p, ok = jsonInt(p)
			e.V = int(n)
		case "id":
			bit = 1 << 1
			str, p, ok = jsonString(p)
			e.ID = string(str) // one per run: nothing to share
		case "k":
			bit = 1 << 2
			p, ok = jsonKey(p, &e.Key)
		case "plan":
			bit = 1 << 3
			str, p, ok = jsonString(p)
			e.Plan = in.str(str)
		case "name":
			bit = 1 << 4
			str, p, ok = jsonString(p)
			e.Name = in.str(str)
		case "status":
			bit = 1 << 5
			str, p, ok = jsonString(p)
			e.Status = in.str(str)
		case "start":
			bit = 1 << 6
			e.Start, p, ok = jsonInt(p)
		case "end":
			bit = 1 << 7
			e.End, p, ok = jsonInt(p)
		case "steps":
			bit = 1 << 8
			var n int64
			n, p, ok = jsonInt(p)
			e.Steps = int(n)
		case "failed":
			bit = 1 << 9
			var n int64
			n, p, ok = jsonInt(p)
			e.Failed = int(n)
		case "hosts":
			bit = 1 << 10
			e.Hosts, p, ok = jsonStrings(p, in)
		default: // usage, or a field this version does not know
			return e, false
		}
		if !ok || seen&bit != 0 || len(p) == 0 {
			return e, false
		}
		seen |= bit
		switch p[0] {
		case ',':
			p = p[1:]
		case '}':
			return e, len(p) == 1
		default:
			return e, false
		}
	}
}

// jsonString reads a string without escapes, of valid UTF-8.
func jsonString(p []byte) ([]byte, []byte, bool) {
	if len(p) == 0 || p[0] != '"' {
		return nil, p, false
	}
	ascii := true
	for i := 1; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"':
			s := p[1:i]
			if !ascii && !utf8.Valid(s) {
				return nil, p, false
			}
			return s, p[i+1:], true
		case c == '\\' || c < 0x20:
			return nil, p, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, p, false
}

// jsonInt reads an integer as json.Marshal writes one (no sign but '-',
// no leading zero, no fraction or exponent) that an int64 holds, its
// negative bound aside.
func jsonInt(p []byte) (int64, []byte, bool) {
	neg := len(p) > 0 && p[0] == '-'
	if neg {
		p = p[1:]
	}
	i := 0
	var n int64
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		d := int64(p[i] - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, p, false
		}
		n = n*10 + d
		i++
	}
	if i == 0 || (i > 1 && p[0] == '0') || (i < len(p) && p[i] != ',' && p[i] != '}' && p[i] != ']') {
		return 0, p, false
	}
	if neg {
		n = -n
	}
	return n, p[i:], true
}

// jsonKey reads a fileKey: an array of exactly its six integers.
func jsonKey(p []byte, k *fileKey) ([]byte, bool) {
	if len(p) == 0 || p[0] != '[' {
		return p, false
	}
	p = p[1:]
	for i := range k {
		var ok bool
		if k[i], p, ok = jsonInt(p); !ok || len(p) == 0 {
			return p, false
		}
		want := byte(',')
		if i == len(k)-1 {
			want = ']'
		}
		if p[0] != want {
			return p, false
		}
		p = p[1:]
	}
	return p, true
}

// jsonStrings reads a non-empty array of strings.
func jsonStrings(p []byte, in interner) ([]string, []byte, bool) {
	if len(p) == 0 || p[0] != '[' {
		return nil, p, false
	}
	p = p[1:]
	var out []string
	for {
		s, rest, ok := jsonString(p)
		if !ok || len(rest) == 0 {
			return nil, p, false
		}
		out = append(out, in.str(s))
		p = rest[1:]
		switch rest[0] {
		case ',':
		case ']':
			return out, p, true
		default:
			return nil, p, false
		}
	}
}
