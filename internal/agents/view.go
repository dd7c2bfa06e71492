package agents

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/planrunner/runner/internal/board"
)

// NotesPrefix is where an agent keeps its private notes: keys under
// "notes/<agent>/". They appear in that agent's board view only, and other
// agents' board tools refuse them.
const NotesPrefix = "notes/"

// ViewLimits bound the board view rendered into a prompt. Seed 002 warns
// that a board grows without bound; a prompt must not.
type ViewLimits struct {
	Entries  int // the newest Entries public entries (0: DefaultView.Entries)
	Keys     int // the most recently written Keys shared keys (0: DefaultView.Keys)
	MaxBytes int // the whole view (0: DefaultView.MaxBytes)
}

// DefaultView is the bound of a view when a step sets none.
var DefaultView = ViewLimits{Entries: 20, Keys: 20, MaxBytes: 8192}

func (l ViewLimits) withDefaults() ViewLimits {
	if l.Entries <= 0 {
		l.Entries = DefaultView.Entries
	}
	if l.Keys <= 0 {
		l.Keys = DefaultView.Keys
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultView.MaxBytes
	}
	return l
}

// ViewEntry is one public entry of a view (a problem, a contribution, a
// decision...), oldest first.
type ViewEntry struct {
	Kind    string
	Author  string
	Topic   string // "" : seen by every agent
	Content any
}

// View renders the board as agent sees it: the public entries given, the
// board's live keys it may read, and its private notes, each filtered by
// the agent's topics and bounded by lim. Whatever the bounds leave out is
// counted in the view, so the model knows the board holds more.
func (s *Set) View(b *board.Board, agent string, public []ViewEntry, lim ViewLimits) string {
	lim = lim.withDefaults()
	a := s.agents[agent]
	var topics, read []string
	if a != nil {
		topics, read = a.Spec.Subscribe, a.Spec.Board.Read
	}
	itemCap := max(lim.MaxBytes/4, 64)

	var pub []string
	for _, e := range public {
		if Subscribed(topics, e.Topic) {
			pub = append(pub, clipLine(fmt.Sprintf("[%s] %s: %s", e.Kind, e.Author, text(e.Content)), itemCap))
		}
	}
	// Keys are formatted lazily, newest first, only as far as the view
	// shows them: a board of many keys costs a pass over their names, not
	// a line each.
	var keys, notes lazyLines
	if b != nil {
		// A key or a note gets at most a quarter of its section's share.
		keyCap := max(lim.MaxBytes/16, 64)
		own := NotesPrefix + agent + "/"
		notes = lazyLines{b: b, topics: topics, cap: keyCap, own: own}
		infos := b.Keys(own) // few: one agent's notes
		sort.SliceStable(infos, func(i, j int) bool { return infos[i].TS.Before(infos[j].TS) })
		for _, k := range infos {
			notes.keys = append(notes.keys, k.Key)
		}
		keys = lazyLines{b: b, topics: topics, cap: keyCap}
		keys.keys, keys.partial = recentKeys(b, lim.Keys+1, func(key string) bool {
			return !strings.HasPrefix(key, NotesPrefix) || (!strings.HasPrefix(key, own) && !s.privateKey(key, agent))
		}, func(key string) bool { return allowed(agent, "read", key, read) == nil }, topics)
	}

	// Notes and keys take at most a quarter of the bytes each; the public
	// entries, the conversation itself, take the rest.
	noteLines, noteBytes, noteLeft := notes.newest(lim.Entries, lim.MaxBytes/4)
	keyLines, keyBytes, keyLeft := keys.newest(lim.Keys, lim.MaxBytes/4)
	pubLines, _, pubLeft := newest(pub, lim.Entries, lim.MaxBytes-noteBytes-keyBytes)

	var out strings.Builder
	section := func(title string, lines []string, left, n int, what string, partial bool) {
		if len(lines) == 0 && left == 0 {
			return
		}
		if out.Len() > 0 {
			out.WriteString("\n")
		}
		fmt.Fprintf(&out, "=== %s ===\n", title)
		switch {
		case left > 0 && partial:
			fmt.Fprintf(&out, "(older %s left out to keep this view within %d %s and %d bytes)\n", what, n, what, lim.MaxBytes)
		case left > 0:
			fmt.Fprintf(&out, "(%d earlier %s left out to keep this view within %d %s and %d bytes)\n", left, what, n, what, lim.MaxBytes)
		}
		for _, l := range lines {
			out.WriteString(l + "\n")
		}
	}
	section("Public board", pubLines, pubLeft, lim.Entries, "entries", false)
	section("Shared keys", keyLines, keyLeft, lim.Keys, "keys", keys.partial)
	section("Your private notes", noteLines, noteLeft, lim.Entries, "notes", false)
	if out.Len() == 0 {
		return "(empty)\n"
	}
	if len(topics) > 0 {
		fmt.Fprintf(&out, "(you see the topics %s, and entries without a topic)\n", strings.Join(topics, ", "))
	}
	return out.String()
}

// newest keeps the newest lines that fit in n lines and budget bytes, in
// order; it returns them, their size and how many it left out.
func newest(lines []string, n, budget int) ([]string, int, int) {
	size, i := 0, len(lines)
	for i > 0 && len(lines)-i < n && size+len(lines[i-1])+1 <= budget {
		size += len(lines[i-1]) + 1
		i--
	}
	return lines[i:], size, i
}

// lazyLines are the keys of a view section, oldest first, formatted only
// as far as the view shows them: a board of many keys costs a look at each
// (its topic), not a line each.
type lazyLines struct {
	b      *board.Board
	topics []string
	cap    int
	own    string // notes: the prefix taken off their keys
	keys   []string
	// partial: keys holds the newest keys only, so the count of those
	// left out is a lower bound.
	partial bool
}

// recentKeys returns, oldest first, the newest live keys that pass keep
// and read and whose topic the agent sees: at least want of them when the
// board has that many. It reads the board's newest entries in growing
// windows instead of listing every key, so a view costs about the same on
// a board of a million keys as on one of a hundred; partial says that
// older keys were not looked at.
func recentKeys(b *board.Board, want int, keep, read func(string) bool, topics []string) ([]string, bool) {
	seen := map[string]bool{}
	var newestFirst []string
	for w := 256; ; w *= 4 {
		entries := b.Query(board.Filter{Limit: w})
		clear(seen)
		newestFirst = newestFirst[:0]
		for i := len(entries) - 1; i >= 0; i-- {
			k := entries[i].Key
			if k == "" || seen[k] {
				continue
			}
			seen[k] = true
			if !keep(k) || !read(k) {
				continue
			}
			e, ok := b.Get(k)
			if !ok || !Subscribed(topics, EntryTopic(e)) {
				continue
			}
			newestFirst = append(newestFirst, k)
		}
		if len(newestFirst) >= want || len(entries) < w {
			slices.Reverse(newestFirst)
			return newestFirst, len(entries) == w
		}
	}
}

// newest is newest for keys: the newest lines the agent sees that fit in n
// lines and budget bytes, their size, and how many it sees beyond them.
func (l lazyLines) newest(n, budget int) ([]string, int, int) {
	var kept []string
	size, left, full := 0, 0, false
	for i := len(l.keys) - 1; i >= 0; i-- {
		e, ok := l.b.Get(l.keys[i])
		if !ok || !Subscribed(l.topics, EntryTopic(e)) {
			continue
		}
		if full || len(kept) == n {
			full = true
			left++
			continue
		}
		var line string
		if l.own != "" {
			line = clipLine(fmt.Sprintf("%s: %s", strings.TrimPrefix(e.Key, l.own), text(e.Content)), l.cap)
		} else {
			line = fmt.Sprintf("%s (%s, v%d): %s", e.Key, e.Author, e.Version, text(e.Content))
			if c, ok := openConflict(l.b, e.Key); ok {
				// Both sides share the line's budget, so a long value
				// cannot push the other out of view.
				half := max(l.cap/2, 64)
				line = clipLine(line, half) + " " + clipLine(fmt.Sprintf("[CONFLICT: this write replaced %s's v%v without reading it: %s]",
					c["overwritten_author"], c["overwritten_version"], text(c["overwritten_value"])), half)
			} else {
				line = clipLine(line, l.cap)
			}
		}
		if size+len(line)+1 > budget {
			full = true
			left++
			continue
		}
		kept = append(kept, line)
		size += len(line) + 1
	}
	slices.Reverse(kept)
	return kept, size, left
}

// openConflict describes the conflict behind key's live value, if there is
// one (board.OpenConflict): the value the live one replaced unseen, and
// its author, so the agent that resolves it sees both sides without plan
// wiring (seed 003's debate protocol). It is what board_read returns under
// "conflict".
func openConflict(b *board.Board, key string) (map[string]any, bool) {
	if b == nil {
		return nil, false
	}
	c, ok := b.OpenConflict(key)
	if !ok {
		return nil, false
	}
	content, _ := c.Content.(map[string]any)
	over, _ := content["overwritten"].(map[string]any)
	written, _ := content["written"].(map[string]any)
	return map[string]any{
		"written_by":          written["author"],
		"overwritten_author":  over["author"],
		"overwritten_version": over["version"],
		"overwritten_value":   over["value"],
		"note": "the live value was written without reading the value it replaced; " +
			"read both, then write the resolution",
	}, true
}

// Subscribed reports whether an agent with the given topics sees an entry
// of topic t: entries without a topic are seen by all, and an agent that
// subscribes to nothing sees every topic.
func Subscribed(topics []string, t string) bool {
	return t == "" || len(topics) == 0 || slices.Contains(topics, t)
}

// privateKey reports whether key is another agent's private note.
func (s *Set) privateKey(key, agent string) bool {
	rest, ok := strings.CutPrefix(key, NotesPrefix)
	if !ok {
		return false
	}
	owner, _, ok := strings.Cut(rest, "/")
	if !ok || owner == agent {
		return false
	}
	_, isAgent := s.agents[owner]
	return isAgent
}

// text renders an entry's content for a prompt: a string as it is,
// anything else as compact JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// clipLine keeps a view line on one logical item: at most n bytes, cut
// on a rune boundary, saying how much was cut.
func clipLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 32
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…[%d bytes cut]", s[:cut], len(s)-cut)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// EntryTopic is the topic an entry was written under ("" : none).
func EntryTopic(e board.Entry) string { return e.Topic }
