package runs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// The run index is DIR/.runner/runs.index: one JSON line per run summary,
// appended as a run starts and ends (and by a listing that had to read a
// run), so that listing runs reads one file and stats each run rather
// than loading every board. A later line for a run supersedes an earlier
// one. Appends hold an OS lock on runs.index.lock, so runs in separate
// processes never interleave lines; a line cut short by a crash has no
// newline and is skipped (and the next append starts a new line).
//
// The index is a cache, never trusted over the runs: an entry is used
// only for a run that had stopped, and only while one stat of the run's
// folder reads as the entry recorded it (fileKey: its change time moves
// with every change to the run). A key is recorded only when the
// file system's clock had passed the folder's change time before the run
// was read (fsNow): a change in the same tick as the one before it leaves
// the time as it was, so an entry whose key is not strictly older than
// its reading is recorded with no key, and read again next time (the
// "racy git" problem). Anything else is read from the run's folder and
// noted again. A lost or torn index is rebuilt that way; entries of
// deleted runs are dropped when the file is compacted.

const indexVersion = 2

// IndexPath is the run index of the runs saved under dir.
func IndexPath(dir string) string { return filepath.Join(dir, ".runner", "runs.index") }

// indexEntry is one line of the index: a run's summary as its files say
// it (Plan the plan's absolute path; times in ns since 1970, UTC), kept
// short, since a listing reads every line.
type indexEntry struct {
	V      int              `json:"v"`
	ID     string           `json:"id"`
	Key    fileKey          `json:"k"`
	Plan   string           `json:"plan,omitempty"`
	Name   string           `json:"name,omitempty"`
	Status string           `json:"status"`
	Start  int64            `json:"start,omitempty"`
	End    int64            `json:"end,omitempty"`
	Steps  int              `json:"steps,omitempty"`
	Failed int              `json:"failed,omitempty"`
	Usage  *agents.RunUsage `json:"usage,omitempty"` // nil: no model calls
	Hosts  []string         `json:"hosts,omitempty"`
}

// noUsage is the usage of a run without model calls.
var noUsage = agents.RunUsage{PriceKnown: true}

func entryOf(key fileKey, s Summary) indexEntry {
	e := indexEntry{V: indexVersion, ID: s.ID, Key: key, Plan: s.Plan, Name: s.Name, Status: s.Status,
		Steps: s.Steps, Failed: s.Failed, Hosts: s.Hosts}
	if !s.StartedAt.IsZero() {
		e.Start = s.StartedAt.UnixNano()
	}
	if s.EndedAt != nil {
		e.End = s.EndedAt.UnixNano()
	}
	if s.Usage != noUsage {
		u := s.Usage
		e.Usage = &u
	}
	return e
}

func (e indexEntry) summary() Summary {
	s := Summary{ID: e.ID, Plan: e.Plan, Name: e.Name, Status: e.Status, Steps: e.Steps, Failed: e.Failed,
		Hosts: e.Hosts, Usage: noUsage}
	if e.Start != 0 {
		s.StartedAt = time.Unix(0, e.Start).UTC()
	}
	if e.End != 0 {
		t := time.Unix(0, e.End).UTC()
		s.EndedAt = &t
	}
	if e.Usage != nil {
		s.Usage = *e.Usage
	}
	return s
}

// fileKey is what says that a run's files are as they were (keyOf);
// the zero key matches no run.
type fileKey [6]int64

// fsNow is the file system's time now, as a run's folder's change time
// would read it, and the device it is of (a variable: tests stop it).
var fsNow = fsNowOS

// stableKey is key as an entry records it: the zero key unless the file
// system's clock (now, on device dev) had passed the key's stamp before
// the run was read.
func stableKey(key fileKey, now, dev int64, ok bool) fileKey {
	if !ok || key.stamp() >= now || key.dev() != dev {
		return fileKey{}
	}
	return key
}

// index is the run index as read, each run's latest line kept undecoded
// until it is needed.
type index struct {
	path  string
	lines map[string][]byte
	count int // lines read, superseded ones included
	mu    sync.Mutex
	fresh []indexEntry // runs read from their files, to be indexed

	// A listing's: the runs directory, open; the listed directory made
	// absolute; and the file system's time taken before the first run
	// was read (fsNow).
	runsDir  runsDirFD
	absDir   string
	nowOnce  sync.Once
	now, dev int64
	nowOK    bool
}

// listing readies ix to look up the runs saved under dir; done ends it.
func (ix *index) listing(dir string) (done func()) {
	ix.runsDir = openRunsDir(RunsDir(dir))
	ix.absDir, _ = filepath.Abs(dir)
	return ix.runsDir.close
}

var entryPrefix = []byte(`{"v":2,"id":"`)

func readIndex(path string) *index {
	data, err := os.ReadFile(path)
	if err != nil {
		return &index{path: path, lines: map[string][]byte{}}
	}
	ix := &index{path: path, lines: make(map[string][]byte, len(data)/200)} // a line is about 230 bytes
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // cut short: its writer died mid-line
		}
		line := data[:i]
		data = data[i+1:]
		ix.count++
		if !bytes.HasPrefix(line, entryPrefix) {
			continue
		}
		rest := line[len(entryPrefix):]
		j := bytes.IndexByte(rest, '"')
		if j <= 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
			continue // an id that needs escaping is read from its run every time
		}
		// The key is the id's bytes in data, which nothing changes: a
		// hundred thousand ids are not copied again.
		ix.lines[unsafe.String(&rest[0], j)] = line
	}
	return ix
}

// entry is the index's entry for run id, if it has a whole one.
func (ix *index) entry(id string) (indexEntry, bool) { return ix.entryWith(id, nil) }

func (ix *index) entryWith(id string, in interner) (indexEntry, bool) {
	line, ok := ix.lines[id]
	if !ok {
		return indexEntry{}, false
	}
	e, ok := decodeEntryWith(line, in)
	if !ok || e.V != indexVersion || e.ID != id {
		return indexEntry{}, false
	}
	return e, true
}

// summaries are the summaries of the runs ids under dir, in their order,
// made by as many goroutines as there are CPUs; a zero Summary where an
// id names no run.
func (ix *index) summaries(dir string, ids []string) []Summary {
	out := make([]Summary, len(ids))
	workers := min(runtime.GOMAXPROCS(0), (len(ids)+255)/256)
	if workers <= 1 {
		w := newWorker()
		for i, id := range ids {
			out[i], _ = ix.summary(dir, id, w)
		}
		return out
	}
	var wg sync.WaitGroup
	per := (len(ids) + workers - 1) / workers
	for at := 0; at < len(ids); at += per {
		wg.Go(func() {
			w := newWorker()
			for i := at; i < min(at+per, len(ids)); i++ {
				out[i], _ = ix.summary(dir, ids[i], w)
			}
		})
	}
	wg.Wait()
	return out
}

// worker is what one goroutine of a listing keeps from run to run: the
// strings it decoded, and the plans it showed relative to the directory.
type worker struct {
	in   interner
	plan map[string]string
}

func newWorker() *worker { return &worker{in: interner{}, plan: map[string]string{}} }

func (w *worker) relPlan(absDir, plan string) string {
	rel, ok := w.plan[plan]
	if !ok {
		rel = relPlanAbs(absDir, plan)
		w.plan[plan] = rel
	}
	return rel
}

// summary is the summary of run id under dir: from the index while its
// entry holds, else read from the run (and noted to be indexed). False:
// id names no run.
func (ix *index) summary(dir, id string, w *worker) (Summary, bool) {
	// runDirs's names hold no separator and are not "." or "..": this is
	// filepath.Join's path.
	path := ix.runsDir.path + string(filepath.Separator) + id + string(filepath.Separator) + "blackboard.json"
	key, isDir := ix.runsDir.key(id)
	if isDir {
		if e, ok := ix.entryWith(id, w.in); ok && e.Key == key && stopped(e.Status) {
			s := e.summary()
			s.ID, s.Path = id, path
			s.Plan = w.relPlan(ix.absDir, s.Plan)
			return s, true
		}
	}
	if fi, err := os.Stat(path); !isDir || err != nil || !fi.Mode().IsRegular() {
		if !isDir || !exists(liveboard.RemotePath(path)) {
			return Summary{}, false
		}
		return summarize(dir, id), true // on Temporal: no file of its own yet
	}
	ix.nowOnce.Do(func() { ix.now, ix.dev, ix.nowOK = fsNow(ix.path) })
	s := summarizeAbs(path, id, false)
	if !s.Live && s.Error == "" && stopped(s.Status) && len(s.Batches) == 0 {
		ix.mu.Lock()
		ix.fresh = append(ix.fresh, entryOf(stableKey(key, ix.now, ix.dev, ix.nowOK), s))
		ix.mu.Unlock()
	}
	s.Plan = w.relPlan(ix.absDir, s.Plan)
	return s, true
}

// stopped: a run with this status has no process of its own that may be
// changing it unseen (a running one is read again to see whether it
// still lives).
func stopped(status string) bool {
	return status != board.StatusRunning && status != "" && status != "unknown"
}

// save appends what the listing had to read, and compacts the file when
// superseded and deleted runs' lines outnumber the live ones. Best
// effort: a listing never fails for its cache.
func (ix *index) save(ids []string) {
	if len(ix.fresh) > 0 {
		appendIndex(ix.path, ix.fresh)
		ix.count += len(ix.fresh)
	}
	if ix.count > 2*len(ids)+1000 {
		compactIndex(ix.path, ids)
	}
}

// appendIndex adds entries to the index at path, under its lock.
func appendIndex(path string, entries []indexEntry) error {
	var buf bytes.Buffer
	for _, e := range entries {
		e.V = indexVersion
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	unlock, err := lockIndex(path)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := safefs.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, board.FileMode)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			// A writer died mid-line: that line ends here, unread.
			f.Write([]byte{'\n'})
		}
	}
	_, err = f.Write(buf.Bytes())
	return err
}

// compactIndex rewrites the index at path with the latest line of each
// run in ids, under its lock (so no append is lost), replacing the file
// at once.
func compactIndex(path string, ids []string) error {
	unlock, err := lockIndex(path)
	if err != nil {
		return err
	}
	defer unlock()
	ix := readIndex(path)
	var buf bytes.Buffer
	for _, id := range ids {
		if line, ok := ix.lines[id]; ok {
			buf.Write(line)
			buf.WriteByte('\n')
		}
	}
	return safefs.Replace(path, buf.Bytes(), board.FileMode)
}

func lockIndex(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), board.DirMode); err != nil {
		return nil, err
	}
	f, err := safefs.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, board.FileMode)
	if err != nil {
		return nil, err
	}
	// Where the OS has no flock this returns at once: appends to the
	// index are single writes, and the index is checked against the runs
	// whenever it is read.
	if err := safefs.Flock(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { safefs.Unflock(f); f.Close() }, nil
}

// indexOf is the index a run whose blackboard.json is at path belongs to,
// "" for a run saved outside a runs directory (--board).
func indexOf(path string) string {
	runsDir := filepath.Dir(filepath.Dir(path))
	if filepath.Base(path) != "blackboard.json" || filepath.Base(runsDir) != "runs" || filepath.Base(filepath.Dir(runsDir)) != ".runner" {
		return ""
	}
	return IndexPath(filepath.Dir(filepath.Dir(runsDir)))
}

// noteRun records in its index the run whose board b this process owns
// (and holds the lock of), as it starts or ends. Best effort: a run never
// fails for the index, which is checked against the run whenever it is
// read.
func noteRun(b *board.Board) {
	path := b.Path()
	ip := indexOf(path)
	if ip == "" {
		return
	}
	key, ok := keyOf(path)
	if !ok {
		return
	}
	// b is the run as this process last wrote it, and no other process
	// writes while it holds the lock: a change after now has a later
	// time than the key's.
	now, dev, nowOK := fsNow(ip)
	id := filepath.Base(filepath.Dir(path))
	s := Summary{ID: id}
	summarizeBoard(&s, b)
	appendIndex(ip, []indexEntry{entryOf(stableKey(key, now, dev, nowOK), s)})
}

// runDirs lists the names under dir's runs directory that may be runs'
// directories, oldest first (a run id is a ULID, so its name sorts by its
// start). Which of them hold a run is for the caller to see.
func runDirs(dir string) ([]string, error) {
	f, err := os.Open(RunsDir(dir))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	ids := names[:0]
	for _, n := range names {
		if !strings.HasPrefix(n, ".") {
			ids = append(ids, n)
		}
	}
	sort.Strings(ids)
	return ids, nil
}
