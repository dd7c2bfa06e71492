package board

import (
	"encoding/json"
	"errors"
	"time"
)

// Entry is one record on the board (docs/spec.md §2).
type Entry struct {
	ID      string `json:"id"`
	Seq     int64  `json:"seq"`
	Section string `json:"section"`
	Role    string `json:"role"`
	Author  string `json:"author"`
	Label   string `json:"label"`
	Key     string `json:"key"`
	Version int64  `json:"version"`
	// Topic is the channel the entry was published on (docs/live-board.md): given
	// by the writer, or the key's prefix before its first ':'.
	Topic   string         `json:"topic,omitempty"`
	Content any            `json:"content"`
	Meta    map[string]any `json:"meta"`
	TS      time.Time      `json:"ts"`
	TTL     *float64       `json:"ttl_s"`
	// Deleted marks a key's tombstone: the key reads as absent after it.
	Deleted bool `json:"deleted,omitempty"`
	// metaFloats: packedMeta's numbers are float64s, not ints (pack.go).
	metaFloats bool

	lazy       *lazyEntry // content and meta not decoded yet (LoadForRead)
	packedMeta string     // Meta as JSON, while the board keeps the entry (pack.go)
}

// Expired reports whether a keyed entry's TTL has run out at now.
func (e *Entry) Expired(now time.Time) bool {
	if e.TTL == nil {
		return false
	}
	return now.Sub(e.TS) >= time.Duration(*e.TTL*float64(time.Second))
}

// StepRecord is one finished visit of a step (the `steps` list of docs/spec.md §3).
type StepRecord struct {
	Label      string          `json:"label"`
	Visit      int             `json:"visit"`
	Type       string          `json:"type,omitempty"`
	Parent     string          `json:"parent,omitempty"` // the parallel group it ran in
	Status     string          `json:"status"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at"`
	DurationMS int64           `json:"duration_ms"`
	Attempts   int             `json:"attempts,omitempty"`
	Goto       string          `json:"goto,omitempty"` // where a branch jumped
	Result     json.RawMessage `json:"result"`
	Error      string          `json:"error"`
	// Delays are the retry backoffs the engine drew (ms), kept so a replay
	// reproduces the run without drawing again.
	Delays []int64 `json:"retry_delays_ms,omitempty"`
	// Inputs are the step's templated fields as rendered for its last
	// attempt (field -> text): what the step was actually given.
	Inputs map[string]string `json:"inputs,omitempty"`
	// Host names the host whose worker ran the step's last attempt, on an
	// engine with many hosts (Temporal); "" for a run in one process and
	// for a step the run decides itself (board, branch, input).
	Host string `json:"host,omitempty"`
	// Agent is set on the visit of a sub-agent an llm step's agent
	// started (spawn_agent) and only there: the agent it ran. Parent is
	// then the visit that started it (the step, or another sub-agent), not
	// a group, and Label (STEP/spawn-N-AGENT) is no plan label.
	Agent string `json:"agent,omitempty"`
	// held: the texts of the large strings Result holds as keys, while
	// the board keeps the record (held.go); nil in the records it hands
	// out.
	held  held
	built *built
	// packedInputs: Inputs as JSON, while the board keeps the record
	// (pack.go).
	packedInputs string
}

// Spawned reports whether s is the visit of a sub-agent (see Agent):
// not a step of the plan, so what walks the plan's steps passes it by.
func (s *StepRecord) Spawned() bool { return s.Agent != "" }

// Recording is one non-deterministic exchange (a model call), kept so a
// replay can serve it without the network.
type Recording struct {
	Label         string          `json:"label"`
	Visit         int             `json:"visit"`
	Kind          string          `json:"kind"`
	Call          int             `json:"call,omitempty"` // nth call within the visit, from 1
	Agent         string          `json:"agent,omitempty"`
	RequestSHA256 string          `json:"request_sha256"`
	Request       json.RawMessage `json:"request,omitempty"`
	Response      json.RawMessage `json:"response"`
	// held: as StepRecord's, for Request and Response.
	held  held
	built *built
}

// Run describes the run (the `run` object of docs/spec.md §3).
type Run struct {
	ID            string         `json:"id"`
	PlanPath      string         `json:"plan_path"`
	PlanSHA256    string         `json:"plan_sha256"`
	PlanSource    string         `json:"plan_source"`
	Vars          map[string]any `json:"vars"`
	Workdir       string         `json:"workdir"`
	Status        string         `json:"status"`
	Error         string         `json:"error,omitempty"`
	StartedAt     time.Time      `json:"started_at"`
	FinishedAt    *time.Time     `json:"finished_at"`
	RunnerVersion string         `json:"runner_version"`
	// ReplayOf is the recording a replay was made from.
	ReplayOf string `json:"replay_of,omitempty"`
	// Agents are the `--agent NAME.FIELD=VALUE` overrides the run was
	// started with (agent -> field -> value), so resume uses them again.
	Agents map[string]map[string]string `json:"agents,omitempty"`
	// Reused says what `runner run --reuse` took from earlier runs.
	Reused *Reused `json:"reused,omitempty"`
	// Waiting lists the input steps the run stopped at (status waiting),
	// so `runner answer` knows what to ask and how to check the answer.
	Waiting []WaitingInput `json:"waiting,omitempty"`
	// Batches lists the provider batches the run waits on (an llm step
	// with batch: true): saved the moment each is known, so a resumed
	// run picks up the same batch instead of paying for a second.
	Batches []WaitingBatch `json:"batches,omitempty"`
}

// WaitingBatch is a provider batch a for_each visit's model calls went
// into. ID is empty while it is being submitted: the intent, found again
// by its Key (which the batch carries) if the run stops before the
// provider's answer is saved.
type WaitingBatch struct {
	Label    string    `json:"label"` // the for_each step
	Visit    int       `json:"visit"`
	Agent    string    `json:"agent"`
	Provider string    `json:"provider"`
	Key      string    `json:"key"`
	ID       string    `json:"id,omitempty"`
	Items    int       `json:"items"`
	Status   string    `json:"status,omitempty"` // the provider's word for it, as last polled
	Since    time.Time `json:"since"`
}

// WaitingInput is an input step visit that waits for a person's answer.
type WaitingInput struct {
	Label  string          `json:"label"`
	Visit  int             `json:"visit"`
	Prompt string          `json:"prompt"`
	Form   json.RawMessage `json:"form,omitempty"` // the step's flat JSON Schema
	Since  time.Time       `json:"since"`
	// Deadline is when the input takes its default (or fails); nil: never.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Tool is set when the question is whether an agent may make a tool
	// call (an agent's approve: patterns); Label is then the step's label
	// with /approve-N.
	Tool *WaitingTool `json:"tool,omitempty"`
	// Answerers, when set, are the only people who may answer: each a
	// name as `runner answer` (the operating-system user) or serve (a
	// trusted proxy header, a per-person token) knows them.
	Answerers []string `json:"answerers,omitempty"`
	// Link is the sha256 of a single-use token a notification carried
	// (hex), which answers this input once before LinkExpires without
	// the serve token; the token itself is never saved.
	Link        string     `json:"link_sha256,omitempty"`
	LinkExpires *time.Time `json:"link_expires,omitempty"`
	// Notified says the waiting notification went out (it is sent once).
	Notified bool `json:"notified,omitempty"`
}

// WaitingTool is the tool call a person is asked to allow.
type WaitingTool struct {
	Agent string          `json:"agent"`
	Name  string          `json:"name"` // as the plan names it: a plan tool, or SERVER.TOOL
	Args  json.RawMessage `json:"args"`
}

// Answer is a person's answer to an input step visit: what `runner
// answer` records on a saved run and what a run elsewhere (on Temporal)
// takes as an update. Visit 0 means the visit that waits now.
type Answer struct {
	Label  string         `json:"label"`
	Visit  int            `json:"visit,omitempty"`
	Answer map[string]any `json:"answer"`
	By     string         `json:"by,omitempty"`
	// Asked is what the person was shown, filled in where the answer is
	// checked against the visit that waits (nil: an answer given before
	// the step asked).
	Asked *Asked `json:"asked,omitempty"`
}

// Asked is the exact text a person saw when asked: the rendered question
// and each field of its form with its description, kept with the answer
// so the report and a replay show what was approved, not the plan's
// template.
type Asked struct {
	Prompt string       `json:"prompt"`
	Fields []AskedField `json:"fields,omitempty"`
}

// AskedField is one field of the form a person was shown.
type AskedField struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// The ways an answer is refused, for errors.Is.
var (
	ErrNotWaiting     = errors.New("not waiting for an answer")
	ErrAnswerConflict = errors.New("already answered")
	ErrBadAnswer      = errors.New("the answer does not fit the form")
	ErrNotAnswerer    = errors.New("is not among the input's answerers")
)

// Reused counts the model calls a run answered from earlier runs'
// recordings and those it made live, with their tokens.
type Reused struct {
	From         []string `json:"from"`
	ReusedCalls  int      `json:"reused_calls"`
	ReusedTokens int      `json:"reused_tokens"`
	LiveCalls    int      `json:"live_calls"`
	LiveTokens   int      `json:"live_tokens"`
}

// Run statuses.
const (
	StatusRunning     = "running"
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
	// StatusWaiting: the run stopped at an input step until a person
	// answers (`runner answer`), then `runner resume` goes on.
	StatusWaiting = "waiting"
)
