package testrun

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Limits on what a result holds, so a model's prompt stays short however
// loud the suite is.
const (
	maxExcerptLines = 40
	maxLineLen      = 300      // a line in an excerpt or a message
	maxReadLine     = 64 << 10 // longer lines are cut while reading
	keptLines       = 200      // lines kept per test (head and tail)
	maxFailures     = 100      // failures kept in the result; counts stay exact
	maxBuildErrors  = 50
)

var ansi = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)
})

// stripANSI removes colour and cursor escapes some runners print even with
// NO_COLOR set.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansi().ReplaceAllString(s, "")
}

// clip shortens s to n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// firstLine returns the first non-blank line of s, trimmed and clipped.
func firstLine(s string) string {
	for _, l := range strings.Split(stripANSI(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return clip(l, maxLineLen)
		}
	}
	return ""
}

// excerpt turns output lines into at most maxExcerptLines lines: escapes and
// lines drop says are framing removed, blank runs collapsed, long lines cut.
func excerpt(lines []string, drop func(string) bool) string {
	var out []string
	blank := true // no blank line at the start
	for _, l := range lines {
		l = strings.TrimRight(stripANSI(l), " \t\r")
		if drop != nil && drop(l) {
			continue
		}
		if strings.TrimSpace(l) == "" {
			if blank {
				continue
			}
			blank = true
			l = ""
		} else {
			blank = false
		}
		out = append(out, clip(l, maxLineLen))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if len(out) > maxExcerptLines {
		n := len(out) - (maxExcerptLines - 1)
		out = append(out[:maxExcerptLines-1], fmt.Sprintf("[... %d more lines]", n))
	}
	return strings.Join(out, "\n")
}

// lineWriter splits a byte stream into lines for a parser. Lines longer than
// maxReadLine are cut, so one endless line cannot exhaust memory.
type lineWriter struct {
	buf  []byte
	skip bool // inside the rest of an over-long line
	fn   func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.add(p)
			break
		}
		w.add(p[:i])
		if !w.skip {
			w.emit()
		}
		w.skip = false
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) add(p []byte) {
	if w.skip {
		return
	}
	if room := maxReadLine - len(w.buf); len(p) > room {
		p = p[:room]
		w.skip = true
	}
	w.buf = append(w.buf, p...)
	if w.skip { // hand the cut line over now; the rest is dropped
		w.emit()
		w.skip = true
	}
}

func (w *lineWriter) emit() {
	line := strings.TrimSuffix(string(w.buf), "\r")
	w.buf = w.buf[:0]
	w.fn(line)
}

// flush hands over a last line without a newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit()
	}
}

// lines keeps the first and last keptLines/2 lines of a stream.
type lines struct {
	head, tail []string
	next       int // ring position in tail
	dropped    int
}

func (b *lines) add(l string) {
	l = clip(l, 4*maxLineLen) // an excerpt keeps less; the start says where
	half := keptLines / 2
	if len(b.head) < half {
		b.head = append(b.head, l)
		return
	}
	if len(b.tail) < half {
		b.tail = append(b.tail, l)
		return
	}
	b.tail[b.next] = l
	b.next = (b.next + 1) % half
	b.dropped++
}

func (b *lines) all() []string {
	if b == nil {
		return nil
	}
	out := append([]string(nil), b.head...)
	if b.dropped > 0 {
		out = append(out, fmt.Sprintf("[... %d lines dropped ...]", b.dropped))
	}
	out = append(out, b.tail[b.next:]...)
	return append(out, b.tail[:b.next]...)
}

// tailLines keeps the last n lines (0: 60) of a stream; safe for
// concurrent use because stdout and stderr are read at the same time.
type tailLines struct {
	mu  sync.Mutex
	n   int
	buf []string
	pos int
}

func (t *tailLines) add(l string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n <= 0 {
		t.n = 60
	}
	if len(t.buf) < t.n {
		t.buf = append(t.buf, l)
		return
	}
	t.buf[t.pos] = l
	t.pos = (t.pos + 1) % t.n
}

func (t *tailLines) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append(append([]string(nil), t.buf[t.pos:]...), t.buf[:t.pos]...)
}

// relText shortens the project's absolute paths in a line of output to
// paths relative to it, as the rest of a result has them.
func relText(dir, s string) string {
	if dir == "" || dir == "/" {
		return s
	}
	s = strings.ReplaceAll(s, "file://"+dir+"/", "")
	return strings.ReplaceAll(s, dir+"/", "")
}
