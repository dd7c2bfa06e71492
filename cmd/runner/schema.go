package main

import (
	_ "embed"
	"io"
)

//go:embed plan.schema.json
var planSchema []byte

func cmdSchema(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("schema", stderr)
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	stdout.Write(planSchema)
	return exitOK
}
