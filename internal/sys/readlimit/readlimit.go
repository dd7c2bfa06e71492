// Package readlimit reads files and streams up to a size limit, so that
// no input (/dev/zero given as a plan, a runaway pipe on stdin, a damaged
// blackboard.json) can make runner grow without bound. Past the limit the
// read stops and the error says which input, how large it may be and how
// to raise the limit. It imports only the standard library: plans and
// board, which import nothing else of runner's, use it too.
package readlimit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// The limits of each kind of input (docs/safety.md, "Bounds").
const (
	Plan      = 16 << 20  // a plan file
	Responses = 256 << 20 // a script agent's responses file (answers up to 64 MiB each)
	Board     = 1 << 30   // blackboard.json, its journal, a live board fetched over its socket
	Small     = 1 << 20   // a lock's owner record, a run's remote.json
	Answer    = 16 << 20  // an answer to an input step (--json, stdin)
	Diff      = 64 << 20  // a diff for `runner apply` (the applier's own limit)
	Request   = 64 << 20  // one write sent to a live board (socket body, one `board put -` line)
)

// EnvVar overrides every limit, in MiB: for the rare board or plan that
// is legitimately larger (or, in tests, to try a limit quickly).
const EnvVar = "RUNNER_READ_LIMIT_MB"

// Limit is the limit to apply in place of def: the value of EnvVar when
// it is set to a positive number of MiB, else def.
func Limit(def int64) int64 {
	if s := strings.TrimSpace(os.Getenv(EnvVar)); s != "" {
		if mb, err := strconv.ParseFloat(s, 64); err == nil && mb > 0 && mb < 1<<23 {
			return int64(mb * (1 << 20))
		}
	}
	return def
}

// TooLargeError says that an input passed its limit.
type TooLargeError struct {
	Name  string // the file, or what the stream was ("standard input")
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s, the most runner reads of it (set %s=N to allow N MiB)", e.Name, Size(e.Limit), EnvVar)
}

// ErrTooLarge is what a TooLargeError matches with errors.Is.
var ErrTooLarge = errors.New("input too large")

func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Size is n bytes for a person: "16 MiB", "1.5 KiB", "300 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64), ".0") + " MiB"
	case n >= 1<<10:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64), ".0") + " KiB"
	}
	return fmt.Sprintf("%d bytes", n)
}

// File reads the file at path, up to limit bytes (Limit(limit) is
// applied). A regular file larger than the limit is refused before it is
// read; anything else (a pipe, /dev/zero) is read until it ends or passes
// the limit, so memory stays within the limit either way.
func File(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return FromFile(f, path, limit)
}

// FromFile is File for a file already open, read from where it stands
// and left open; name says what f is in the error.
func FromFile(f *os.File, name string, limit int64) ([]byte, error) {
	limit = Limit(limit)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if fi.Size() > limit {
			return nil, &TooLargeError{Name: name, Limit: limit}
		}
		// The size is known: one buffer of that size (and a byte to see
		// that it grew), not one that doubles as it fills.
		buf := make([]byte, fi.Size()+1)
		n, err := io.ReadFull(f, buf)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
		rest, err := readAll(f, name, limit-int64(n), limit)
		return append(buf[:n], rest...), err
	}
	return readAll(f, name, limit, limit)
}

// Regular is File for an input that must be a regular file (a saved
// run, a lock's record): anything else is refused before it is opened,
// so a FIFO does not block the open and a device is not read.
func Regular(path string, limit int64) ([]byte, error) {
	if err := CheckRegular(path); err != nil {
		return nil, err
	}
	return File(path, limit)
}

// CheckRegular refuses, without opening it, what is not a regular file.
func CheckRegular(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s)", path, kind(fi.Mode()))
	}
	return nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// All reads r to its end, up to limit bytes (Limit(limit) is applied);
// name says what r is in the error.
func All(r io.Reader, name string, limit int64) ([]byte, error) {
	limit = Limit(limit)
	return readAll(r, name, limit, limit)
}

func readAll(r io.Reader, name string, left, limit int64) ([]byte, error) {
	if left < 0 {
		return nil, &TooLargeError{Name: name, Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(r, left+1))
	if err != nil {
		return data, err
	}
	if int64(len(data)) > left {
		return nil, &TooLargeError{Name: name, Limit: limit}
	}
	return data, nil
}

// Reader is r that fails with a TooLargeError once more than limit bytes
// (Limit(limit) applied) were read from it past the last Mark: a stream
// read record by record (JSON lines on stdin) bounds each record, not the
// whole stream.
type Reader struct {
	r     io.Reader
	name  string
	limit int64
	total int64 // bytes read so far
	base  int64 // where the record being read starts
}

// NewReader bounds r; name says what r is in the error.
func NewReader(r io.Reader, name string, limit int64) *Reader {
	return &Reader{r: r, name: name, limit: Limit(limit)}
}

func (l *Reader) Read(p []byte) (int, error) {
	left := l.base + l.limit + 1 - l.total
	if left <= 0 {
		return 0, &TooLargeError{Name: l.name, Limit: l.limit}
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := l.r.Read(p)
	l.total += int64(n)
	if l.total-l.base > l.limit {
		return n, &TooLargeError{Name: l.name, Limit: l.limit}
	}
	return n, err
}

// Mark says the next record starts at offset (bytes from the start of
// the stream; a json.Decoder's InputOffset after a value).
func (l *Reader) Mark(offset int64) { l.base = offset }
