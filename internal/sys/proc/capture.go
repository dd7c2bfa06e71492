package proc

import (
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// capture keeps the first and the last bytes of a stream in fixed memory: a
// head filled once and a ring for the tail. What falls between is counted,
// not kept, so a test that prints 200 MB costs the same as one that prints
// 2 MB. Extra, when set, sees every byte (a streaming parser, a live log).
type capture struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // ring buffer, allocated when the head is full
	next  int    // write position in tail
	full  bool   // tail has wrapped at least once
	limit int    // bytes kept in total: head + tail
	total int64
	extra io.Writer
	// extraErr is the first error from extra; after it, extra is skipped so
	// a failing sink never stops the process from being drained.
	extraErr error
}

func newCapture(limit int, extra io.Writer) *capture {
	return &capture{limit: limit, extra: extra}
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if c.extra != nil && c.extraErr == nil {
		if _, err := c.extra.Write(p); err != nil {
			c.extraErr = err
		}
	}
	headMax := c.limit / 2
	if room := headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailMax := c.limit - headMax
	if len(p) == 0 || tailMax == 0 {
		return n, nil
	}
	if c.tail == nil {
		c.tail = make([]byte, tailMax)
	}
	if len(p) >= tailMax { // only the last tailMax bytes can survive
		copy(c.tail, p[len(p)-tailMax:])
		c.next, c.full = 0, true
		return n, nil
	}
	k := copy(c.tail[c.next:], p)
	if k < len(p) {
		copy(c.tail, p[k:])
		c.full = true
	}
	c.next = (c.next + len(p)) % tailMax
	if c.next == 0 && len(p) > 0 {
		c.full = true
	}
	return n, nil
}

// output renders what was kept. The cut is moved off a split UTF-8
// sequence so the text stays valid for JSON and for a model's prompt.
func (c *capture) output() Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	var tail []byte
	if c.full {
		tail = append(append(tail, c.tail[c.next:]...), c.tail[:c.next]...)
	} else if c.tail != nil {
		tail = c.tail[:c.next]
	}
	kept := int64(len(c.head) + len(tail))
	out := Output{Bytes: c.total, Dropped: c.total - kept}
	if out.Dropped == 0 {
		out.Text = string(c.head) + string(tail)
		return out
	}
	head := trimPartialEnd(c.head)
	tail = trimPartialStart(tail)
	out.Dropped = c.total - int64(len(head)+len(tail))
	out.Text = fmt.Sprintf("%s\n[... %d bytes dropped ...]\n%s", head, out.Dropped, tail)
	return out
}

// trimPartialEnd drops an incomplete UTF-8 sequence at the end of b.
func trimPartialEnd(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if r := b[len(b)-i]; utf8.RuneStart(r) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// trimPartialStart drops continuation bytes at the start of b.
func trimPartialStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
