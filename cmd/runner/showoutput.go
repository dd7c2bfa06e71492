package main

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/rs/zerolog"
)

// showOutput is the engine.Runner.Output that streams command and test
// steps' output, each line
// prefixed by the step's label: through the live display on the console,
// as "output" events with JSON logs.
func showOutput(log zerolog.Logger, stderr io.Writer, g *globals) func(label string, visit int, stream string) io.Writer {
	var mu sync.Mutex // lines of parallel steps do not interleave mid-line
	return func(label string, visit int, stream string) io.Writer {
		name := name(label, visit)
		return &prefixer{emit: func(line string) {
			mu.Lock()
			defer mu.Unlock()
			if g.format(stderr) == "json" {
				log.Info().Str("step", label).Int("visit", visit).Str("stream", stream).Str("line", line).Msg("output")
				return
			}
			w := g.mask.Writer(stderr)
			if g.view != nil {
				w = g.view
			}
			fmt.Fprintf(w, "%s | %s\n", name, line)
		}}
	}
}

// prefixer cuts a stream into lines for emit.
type prefixer struct {
	buf  []byte
	emit func(line string)
}

func (p *prefixer) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.emit(string(bytes.TrimRight(p.buf[:i], "\r")))
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > 64<<10 { // a very long line is shown in pieces
		p.emit(string(p.buf))
		p.buf = p.buf[:0]
	}
	return len(b), nil
}
