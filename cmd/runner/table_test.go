package main

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"
)

// writeTable writes what tabwriter writes of the same rows.
func TestWriteTableAsTabwriter(t *testing.T) {
	tests := []struct {
		name string
		rows [][]string
	}{
		{"none", nil},
		{"a header", [][]string{{"ID", "PLAN", "COST"}}},
		{"rows", [][]string{{"ID", "PLAN", "COST"}, {"01ABC", "plan.yaml", "-"}, {"01ABD", "a/longer/plan.yaml", "$0.12+"}}},
		{"wide runes", [][]string{{"ID", "PLAN", "STATUS"}, {"1", "plän/日本.yaml", "failed on host hé"}, {"2", "p", "ok"}}},
		{"empty cells", [][]string{{"", "", ""}, {"a", "", "c"}}},
		{"a long cell", [][]string{{"a", "b"}, {strings.Repeat("x", 200), "y"}}},
		{"a tab in a cell", [][]string{{"a", "b", "c"}, {"x\ty", "z", "w"}}},
		{"tabwriter's escape byte", [][]string{{"a", "b"}, {"x\xffy\xff", "z"}}},
		{"rows of unequal lengths", [][]string{{"a", "b", "c"}, {"x", "y"}}},
	}
	for _, tt := range tests {
		var want bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
		for _, row := range tt.rows {
			tw.Write([]byte(strings.Join(row, "\t") + "\n"))
		}
		tw.Flush()
		var got bytes.Buffer
		if err := writeTable(&got, tt.rows); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: wrote\n%q\ntabwriter:\n%q", tt.name, got.String(), want.String())
		}
	}
}
