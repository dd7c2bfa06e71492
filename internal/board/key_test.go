package board

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckKey(t *testing.T) {
	for _, ok := range []string{"task:1", "a/b.c-d_e", "clé", "日本", "\uFFFD is fine as text", "with space"} {
		if err := CheckKey(ok); err != nil {
			t.Errorf("CheckKey(%q): %v", ok, err)
		}
	}
	for key, want := range map[string]string{
		"":            "the key is empty",
		" \t":         "the key is empty",
		"a\x00b":      "NUL (U+0000), at byte 1",
		"a\nb":        `a newline (\n), at byte 1`,
		"a\rb":        "a carriage return",
		"\x1b[2J":     "ESC (U+001B), at byte 0",
		"a\x7f":       "U+007F, at byte 1",
		"a\u0085":     "U+0085, at byte 1",
		"a\xffb":      "not valid UTF-8 (byte 1 is 0xff)",
		"a\u2028b":    "U+2028 at byte 1",
		"ab\u202ec":   "U+202E at byte 2",
		"x\u2066y":    "U+2066 at byte 1",
		"\u200fright": "U+200F at byte 0",
	} {
		err := CheckKey(key)
		if !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckKey(%q) = %v, want %q", key, err, want)
		}
	}
}

// Every way a key enters a board refuses a bad one and writes nothing:
// Write (the socket, the CLI, agents' board tools, board steps), Append,
// FinishStep (a step's write: key).
func TestBadKeysRefusedEverywhere(t *testing.T) {
	for _, key := range []string{"a\x00b", "a\nb", "a\xff", "a\u202e"} {
		b := New(Run{ID: "r"})
		if _, err := b.Write(WriteOp{Key: key, Value: 1, ExpectVersion: -1}); !errors.Is(err, ErrBadKey) {
			t.Errorf("Write(%q): %v", key, err)
		}
		if _, err := b.Append(Entry{Section: "kv", Key: key, Content: 1}); !errors.Is(err, ErrBadKey) {
			t.Errorf("Append(%q): %v", key, err)
		}
		err := b.FinishStep(StepRecord{Label: "s", Visit: 1}, Entry{Section: "steps", Label: "s"},
			&WriteOp{Key: "fine", Value: 1, ExpectVersion: -1}, &WriteOp{Key: key, Value: 2, ExpectVersion: -1})
		if !errors.Is(err, ErrBadKey) {
			t.Errorf("FinishStep with key %q: %v", key, err)
		}
		if b.Len() != 0 || len(b.Steps()) != 0 {
			t.Errorf("key %q: the board took %d entries, %d steps", key, b.Len(), len(b.Steps()))
		}
	}
}

// A negative expected version is refused, not taken as "any version".
func TestNegativeExpectVersionRefused(t *testing.T) {
	b := New(Run{ID: "r"})
	for _, v := range []int64{-2, -5, -1 << 62} {
		if _, err := b.Write(WriteOp{Key: "k", Value: 1, ExpectVersion: v}); err == nil || !strings.Contains(err.Error(), "want 0 or more") {
			t.Errorf("ExpectVersion %d: %v", v, err)
		}
	}
	if b.Len() != 0 {
		t.Errorf("the board took %d writes", b.Len())
	}
}

// A key holding a secret is refused, saying so without the secret: masked
// it would be stored as k-***, which board('k-' + secret) misses and
// where two such keys collide.
func TestSecretInKeyRefused(t *testing.T) {
	const secret = "s3cr3t-value-42"
	dir := t.TempDir()
	b, err := Create(dir+"/bb.json", Run{ID: "r"}, Options{Redact: func(s string) string { return strings.ReplaceAll(s, secret, "***") }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), `"k-***" holds a secret`) || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, err = b.Write(WriteOp{Key: "k-" + secret, Value: 1, ExpectVersion: -1})
	check("Write", err)
	// Refused before the author's patterns or the TTL are checked: their
	// errors would print the key.
	b.SetPerms(map[string]Perms{"bot": {Write: []string{"other:*"}}})
	_, err = b.Write(WriteOp{Key: "k-" + secret, Value: 1, Author: "bot", ExpectVersion: -1})
	check("Write by a denied author", err)
	_, err = b.Write(WriteOp{Key: "k-" + secret, Value: 1, TTL: -time.Second, ExpectVersion: -1})
	check("Write with a bad TTL", err)
	_, err = b.Append(Entry{Section: "kv", Key: "k-" + secret})
	check("Append", err)
	check("FinishStep", b.FinishStep(StepRecord{Label: "s", Visit: 1}, Entry{Section: "steps", Label: "s"},
		&WriteOp{Key: "k-" + secret, Value: 1, Author: "bot", ExpectVersion: -1}))
	if b.Len() != 0 {
		t.Fatalf("the board took %d entries", b.Len())
	}
	// A secret in the value is masked as before.
	if _, err := b.Write(WriteOp{Key: "k", Value: "v-" + secret, ExpectVersion: -1}); err != nil {
		t.Fatal(err)
	}
	if e, _ := b.Get("k"); e.Content != "v-***" {
		t.Errorf("value %v", e.Content)
	}
}
