package agents

import (
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
)

func TestView(t *testing.T) {
	bot := &plans.Agent{Name: "bot", Provider: "script", Subscribe: []string{"sec"}, Board: plans.AgentBoard{Read: []string{"k*", "notes/*"}}}
	other := &plans.Agent{Name: "other", Provider: "script"}
	set, err := New(onePlan(bot, other), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "v"})
	write := func(key, topic string, v any) {
		if _, err := b.Write(board.WriteOp{Key: key, Topic: topic, Value: v, Author: "runner", ExpectVersion: -1}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 30; i++ {
		write(fmt.Sprintf("k%02d", i), "sec", fmt.Sprintf("sec value %d", i))
		write(fmt.Sprintf("p%02d", i), "perf", "perf value")        // another topic
		write(fmt.Sprintf("kperf%02d", i), "perf", "perf value")    // readable, another topic
		write(fmt.Sprintf("x%02d", i), "", "outside read patterns") // not readable
	}
	write("notes/bot/plan", "", "my plan")
	write("notes/other/plan", "", "other's plan")
	write("kbig", "", strings.Repeat("B", 5000))
	public := []ViewEntry{{Kind: "problem", Author: "user", Content: "the task"}, {Kind: "decision", Author: "boss", Content: map[string]any{"next_agent": "bot"}}}

	v := set.View(b, "bot", public, ViewLimits{Keys: 10, MaxBytes: 4000})
	for _, want := range []string{
		"=== Public board ===\n[problem] user: the task\n[decision] boss: {\"next_agent\":\"bot\"}\n",
		"=== Shared keys ===\n(21 earlier keys left out to keep this view within 10 keys and 4000 bytes)\n",
		"k30 (runner, v1): sec value 30\nkbig (runner, v1): BBB", "bytes cut]",
		"=== Your private notes ===\nplan: my plan\n",
		"(you see the topics sec, and entries without a topic)",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	for _, never := range []string{"perf value", "outside read patterns", "other's plan", "sec value 20\n"} {
		if strings.Contains(v, never) {
			t.Errorf("view has %q:\n%s", never, v)
		}
	}
	if len(v) > 4000+400 {
		t.Errorf("view of %d bytes for a bound of 4000", len(v))
	}
	// An agent subscribed to nothing sees every topic, but not others'
	// notes.
	if v := set.View(b, "other", nil, ViewLimits{}); !strings.Contains(v, "perf value") || strings.Contains(v, "my plan") || !strings.Contains(v, "plan: other's plan") {
		t.Errorf("other's view:\n%s", v)
	}
	if v := set.View(board.New(board.Run{}), "bot", nil, ViewLimits{}); v != "(empty)\n" {
		t.Errorf("empty view = %q", v)
	}

	// A big board: only its newest entries are read, and the view says
	// older keys were left out.
	big := board.New(board.Run{ID: "big"})
	for i := 1; i <= 2000; i++ {
		big.Write(board.WriteOp{Key: fmt.Sprintf("k%04d", i), Topic: "sec", Value: i, Author: "runner", ExpectVersion: -1})
		big.Write(board.WriteOp{Key: fmt.Sprintf("kp%04d", i), Topic: "perf", Value: i, Author: "runner", ExpectVersion: -1})
	}
	v = set.View(big, "bot", nil, ViewLimits{Keys: 3})
	if want := "=== Shared keys ===\n(older keys left out to keep this view within 3 keys and 8192 bytes)\nk1998 (runner, v1): 1998\nk1999 (runner, v1): 1999\nk2000 (runner, v1): 2000\n"; !strings.Contains(v, want) {
		t.Errorf("big board view:\n%s\nwant %s", v, want)
	}
}
