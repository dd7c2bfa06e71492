package agents

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

func f64(v float64) *float64 { return &v }

// Anthropic's pricing rules (https://platform.claude.com/docs/en/about-claude/pricing):
// cache reads cost a tenth of input, 5-minute cache writes 1.25 times;
// Usage.InputTokens counts both, and each is billed at its own price.
func TestCostWithCache(t *testing.T) {
	u := Usage{InputTokens: 1_000_000 + 2_000_000 + 4_000_000, CacheCreationInputTokens: 2_000_000, CacheReadInputTokens: 4_000_000, OutputTokens: 100_000}
	for _, tc := range []struct {
		name  string
		agent *Agent
		model string
		want  float64
	}{
		// 1M plain at $3, 2M written at $3.75, 4M read at $0.30, 0.1M out at $15
		{"built-in price", &Agent{Provider: "anthropic", Spec: &plans.Agent{}}, "claude-sonnet-4-5-20250929", 3 + 7.5 + 1.2 + 1.5},
		{"agent price: Anthropic's cache rule", &Agent{Provider: "anthropic", Spec: &plans.Agent{Price: &plans.Price{Input: 2, Output: 10}}}, "my-claude", 2 + 5 + 0.8 + 1},
		{"agent price with its own cache prices", &Agent{Provider: "anthropic", Spec: &plans.Agent{Price: &plans.Price{Input: 2, Output: 10, CachedInput: f64(0.1), CacheWrite: f64(2.5)}}}, "my-claude", 2 + 5 + 0.4 + 1},
		{"openai agent price: cached input at the input price", &Agent{Provider: "openai", Spec: &plans.Agent{Price: &plans.Price{Input: 2, Output: 10}}}, "local", 2 + 4 + 8 + 1},
		{"a long prompt's tier", &Agent{Provider: "anthropic", Spec: &plans.Agent{}}, "claude-haiku-5-5", 5 * (0.1 + 0.25 + 0.04 + 0.05)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := priceFor(tc.agent, tc.model)
			if !ok {
				t.Fatal("no price")
			}
			if got := p.Cost(u); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("cost = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBuiltinPrices(t *testing.T) {
	if PricesDate() != "2026-11-29" {
		t.Errorf("PricesDate = %q", PricesDate())
	}
	for model, want := range map[string]float64{
		"claude-opus-5-5": 4, "claude-sonnet-5-5-20260915": 2, "gpt-5.5": 5, "gpt-5.4-mini-2026-03-01": 0.75,
		"gemini-3-flash-preview": 0.5, "openai/gpt-4o": 2.5, "gpt-5.5-pro": 30,
	} {
		if p, ok := lookupPrice(model); !ok || p.Input != want {
			t.Errorf("%s: input %v (%v), want %v", model, p.Input, ok, want)
		}
	}
}

// A prices file adds models and overrides built-in ones for the process;
// a missing file is none, a bad one an error naming it.
func TestPricesFile(t *testing.T) {
	t.Cleanup(func() { UsePricesFile("") })
	dir := t.TempDir()
	path := filepath.Join(dir, "prices.yaml")
	os.WriteFile(path, []byte("models:\n  qwen3-coder: {input: 0.2, output: 0.8}\n  gpt-5.5: {input: 4, output: 24, cached_input: 0.4}\n"), 0o644)
	if err := UsePricesFile(path); err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string]float64{"qwen3-coder-30b": 0.2, "gpt-5.5": 4, "gpt-5.4": 2.5} {
		if p, ok := lookupPrice(model); !ok || p.Input != want {
			t.Errorf("%s: input %v (%v), want %v", model, p.Input, ok, want)
		}
	}
	if err := UsePricesFile(filepath.Join(dir, "none.yaml")); err != nil {
		t.Errorf("a missing prices file: %v", err)
	}
	if _, ok := lookupPrice("qwen3-coder"); ok {
		t.Error("the earlier file's prices stayed")
	}
	for _, bad := range []string{"models:\n  x: {input: -1, output: 1}\n", "models:\n  x: {inptu: 1, output: 1}\n", "models:\n  x: {}\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if err := UsePricesFile(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

// A model with no known price under a cost limit is refused before the
// first step, with the lines that would give it one.
func TestUnknownPriceSaysWhatToAdd(t *testing.T) {
	t.Cleanup(func() { UsePricesFile("") })
	UsePricesFile("/cfg/runner/prices.yaml")
	plan := onePlan(&plans.Agent{Name: "coder", Provider: "anthropic", Model: "claude-next-1", MaxTokens: 100})
	plan.Limits.MaxCostUSD = 1
	_, err := New(plan, Options{Getenv: func(string) string { return "k" }})
	want := `agent coder: limits.max_cost_usd needs the price of model "claude-next-1", which runner's prices (of 2026-11-29) do not have; add it, in US dollars per million tokens, to the agent in the plan:
    agents:
      coder:
        price: {input: USD, output: USD}
  or, for every plan, to /cfg/runner/prices.yaml:
    models:
      claude-next-1: {input: USD, output: USD}`
	if err == nil || err.Error() != want {
		t.Errorf("err =\n%v\nwant\n%s", err, want)
	}
}

// Google prices Gemini 2.5 Pro and 3 Pro higher, every token of the call,
// once the prompt is over 200,000 tokens
// (https://ai.google.dev/gemini-api/docs/pricing).
func TestCostLongContextTier(t *testing.T) {
	for _, tc := range []struct {
		model         string
		input, cached int
		want          float64
	}{
		// 199,999 in at $1.25, 10,000 out at $10
		{"gemini-2.5-pro", 199_999, 0, (199_999*1.25 + 10_000*10) / 1e6},
		{"gemini-2.5-pro", 200_000, 0, (200_000*1.25 + 10_000*10) / 1e6},
		// over: $2.50 in, $15 out
		{"gemini-2.5-pro", 200_001, 0, (200_001*2.5 + 10_000*15) / 1e6},
		// cached reads at the tier's cached price: $0.125, then $0.25
		{"gemini-2.5-pro", 199_999, 100_000, (99_999*1.25 + 100_000*0.125 + 10_000*10) / 1e6},
		{"gemini-2.5-pro", 200_001, 100_000, (100_001*2.5 + 100_000*0.25 + 10_000*15) / 1e6},
		{"gemini-3-pro-preview", 199_999, 0, (199_999*2 + 10_000*12) / 1e6},
		{"gemini-3-pro-preview", 200_001, 0, (200_001*4 + 10_000*18) / 1e6},
		{"gemini-3.1-pro-preview", 200_001, 100_000, (100_001*4 + 100_000*0.4 + 10_000*18) / 1e6},
		// no tier: the same rate either side
		{"gemini-2.5-flash", 200_001, 0, (200_001*0.3 + 10_000*2.5) / 1e6},
	} {
		t.Run(tc.model+"/"+strconv.Itoa(tc.input), func(t *testing.T) {
			p, ok := lookupPrice(tc.model)
			if !ok {
				t.Fatal("no price")
			}
			u := Usage{InputTokens: tc.input, CacheReadInputTokens: tc.cached, OutputTokens: 10_000, ReasoningTokens: 4_000}
			if got := p.Cost(u); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("cost = %v, want %v", got, tc.want)
			}
		})
	}
}

// A prices file may give a model a long-context tier; one without its
// threshold or prices is refused, naming the model.
func TestPricesFileLongContext(t *testing.T) {
	t.Cleanup(func() { UsePricesFile("") })
	path := filepath.Join(t.TempDir(), "prices.yaml")
	os.WriteFile(path, []byte("models:\n  big-model: {input: 1, output: 2, long_context: {over: 1000, input: 3, output: 4}}\n"), 0o644)
	if err := UsePricesFile(path); err != nil {
		t.Fatal(err)
	}
	p, _ := lookupPrice("big-model")
	for in, want := range map[int]float64{1000: (1000*1 + 100*2) / 1e6, 1001: (1001*3 + 100*4) / 1e6} {
		if got := p.Cost(Usage{InputTokens: in, OutputTokens: 100}); math.Abs(got-want) > 1e-12 {
			t.Errorf("%d input tokens: cost %v, want %v", in, got, want)
		}
	}
	for bad, msg := range map[string]string{
		"models:\n  m: {input: 1, output: 2, long_context: {input: 3, output: 4}}\n":            "long_context needs over",
		"models:\n  m: {input: 1, output: 2, long_context: {over: 10}}\n":                       "long_context needs input and output",
		"models:\n  m: {input: 1, output: 2, long_context: {over: 10, input: -3, output: 4}}\n": "long_context: a price must not be negative",
	} {
		os.WriteFile(path, []byte(bad), 0o644)
		if err := UsePricesFile(path); err == nil || !strings.Contains(err.Error(), "model m: "+msg) {
			t.Errorf("%q: err = %v, want %q", bad, err, msg)
		}
	}
}
