package main

import (
	"bufio"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// writeTable writes rows as text/tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
// does when each row is its cells joined by tabs: each column but the
// last as wide as its widest cell (in runes) and two spaces. It keeps no
// copy of the text and writes through one buffer, so a listing of
// 100,000 runs costs a tenth of tabwriter's; rows that tabwriter would
// read otherwise (a cell holding a tab, newline, form feed, vertical tab
// or its escape byte, or rows of unequal lengths) go to tabwriter.
func writeTable(w io.Writer, rows [][]string) error {
	cols := 0
	if len(rows) > 0 {
		cols = len(rows[0])
	}
	widths := make([]int, cols)
	for _, row := range rows {
		if len(row) != cols {
			return tabwrite(w, rows)
		}
		for c, cell := range row {
			if strings.ContainsAny(cell, "\t\n\f\v") || strings.IndexByte(cell, tabwriter.Escape) >= 0 {
				return tabwrite(w, rows)
			}
			if c < cols-1 {
				widths[c] = max(widths[c], utf8.RuneCountInString(cell))
			}
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	const pad = "                                                                "
	for _, row := range rows {
		for c, cell := range row {
			bw.WriteString(cell)
			if c == cols-1 {
				break
			}
			for n := widths[c] + 2 - utf8.RuneCountInString(cell); n > 0; n -= len(pad) {
				bw.WriteString(pad[:min(n, len(pad))])
			}
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func tabwrite(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		io.WriteString(tw, strings.Join(row, "\t")+"\n")
	}
	return tw.Flush()
}
