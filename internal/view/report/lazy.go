package report

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html"
	"html/template"
	"iter"
	"strconv"
	"strings"
)

// A long page (one whose steps come in boxes, see chunkSize) keeps each
// run of steps that start closed out of its DOM: their markup, made by
// the "step" template as for any step, gzipped and base64-encoded, is the
// text of a <script type="application/gzip"> that does not run, and
// lazy.js, the page's one script (allowed by its hash in the page's CSP),
// turns it into elements when it nears the screen or is asked for (a
// link, the address). Measuring showed why (docs/benchmarks.md, "The
// 10,000-step page, whole Chromium measured"): Chromium spent most of
// the 10,000-step page's CPU on the closed steps, which no one sees at
// first; kept as raw markup (no elements) they still cost it 1.6 s of
// the 3 s left to scan, gzipped a tenth of that. Steps that start open (a failure
// in a run of up to 500 visits), the header, the timeline and the board
// are markup as on a short page, which runs no script at all.
//
//go:embed lazy.js
var lazyScript string

// lazyCSP is the script-src that allows lazy.js and nothing else.
var lazyCSP = func() string {
	h := sha256.Sum256([]byte(lazyScript))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}()

// segment is a step shown as markup (Step) or a run of closed steps kept
// as data (Data, the <div class="lazy"> that holds them).
type segment struct {
	Step *stepView
	Data template.HTML
}

// lazyBoxes gives each box of steps as segments, rendering the closed
// steps' markup with t's "step" template, one box at a time as the page
// is written: a box's data is let go once written, never all of them
// held. An error stops the boxes and is left in *err.
func lazyBoxes(t *template.Template, boxes [][]*stepView, err *error) iter.Seq[[]segment] {
	return func(yield func([]segment) bool) {
		// One compressor for the page: a new one for each run of closed
		// steps was a megabyte each, most of what a long report allocated.
		var z packer
		for _, box := range boxes {
			segs, e := boxSegments(t, box, &z)
			if e != nil {
				*err = e
				return
			}
			if !yield(segs) {
				return
			}
		}
	}
}

func boxSegments(t *template.Template, box []*stepView, z *packer) ([]segment, error) {
	buf := &z.markup
	var out []segment
	for j := 0; j < len(box); {
		if box[j].Open {
			out = append(out, segment{Step: box[j]})
			j++
			continue
		}
		k := j
		buf.Reset()
		var ids []string
		for ; k < len(box) && !box[k].Open; k++ {
			if err := t.ExecuteTemplate(buf, "step", box[k]); err != nil {
				return nil, err
			}
			ids = stepIDs(box[k], ids)
		}
		out = append(out, segment{Data: z.lazyData(ids)})
		j = k
	}
	return out, nil
}

// packer gzips runs of closed steps' markup, one compressor and its
// buffers for a whole page.
type packer struct {
	markup, packed bytes.Buffer
	zw             *gzip.Writer
}

// lazyData is the element that holds closed steps' markup until the
// script shows it: as tall as the steps will be, with their ids (for a
// link to one), saying what it holds to a reader whose browser runs no
// script. Base64 has no "<": the text cannot end the element early.
func (p *packer) lazyData(ids []string) template.HTML {
	z := &p.packed
	z.Reset()
	if p.zw == nil {
		p.zw, _ = gzip.NewWriterLevel(z, gzip.BestSpeed) // a valid level: no error
	} else {
		p.zw.Reset(z)
	}
	p.zw.Write(p.markup.Bytes()) // into memory: no error
	p.zw.Close()
	var b strings.Builder
	b.Grow(base64.StdEncoding.EncodedLen(z.Len()) + 20*len(ids) + 200)
	b.WriteString(`<div class="lazy" style="height:`)
	b.WriteString(strconv.Itoa(len(ids) * 34))
	b.WriteString(`px" data-ids="`)
	b.WriteString(html.EscapeString(strings.Join(ids, " ")))
	b.WriteString(`"><script type="application/gzip">`)
	b.WriteString(base64.StdEncoding.EncodeToString(z.Bytes()))
	b.WriteString(`</script><p class="meta">`)
	b.WriteString(strconv.Itoa(len(ids)))
	b.WriteString(` closed step`)
	if len(ids) > 1 {
		b.WriteString(`s`)
	}
	b.WriteString(`: the page's own script shows them (the timeline above lists each)</p></div>`)
	return template.HTML(b.String())
}

// stepIDs appends the element ids in s's markup a link can name: its
// own, its calls' texts that later calls link to ("same text as"), and
// those of the steps inside it.
func stepIDs(s *stepView, ids []string) []string {
	ids = append(ids, s.ID())
	text := func(t *textView) {
		if t != nil && t.ID != "" {
			ids = append(ids, t.ID)
		}
	}
	for _, c := range s.Calls() {
		text(c.SystemV)
		for _, m := range c.Messages {
			text(m.ContentV)
		}
		text(c.AnswerV)
	}
	for _, k := range s.Kids() {
		ids = stepIDs(k, ids)
	}
	return ids
}
