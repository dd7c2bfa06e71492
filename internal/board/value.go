package board

import "encoding/json"

// ParseValue is the one rule for a value written as text, on the command
// line (`runner board put KEY TEXT`) and as an unquoted scalar of a
// plan's board step (`value: 42`): JSON when it is JSON (a number, true,
// false, null, an object, a list), else the text as it is. A plan's
// mappings and lists are values too (see internal/steps/board.go); a quoted
// scalar is text, as YAML says.
func ParseValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	return s
}
