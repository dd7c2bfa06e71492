package a2aserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
)

// AnsweredBy is who an answer given over A2A is recorded as answered by.
const AnsweredBy = "a2a"

// executor runs one plan for the SDK: a message without a task starts a
// run; a message to an input-required task answers the input the run
// waits at and resumes it.
type executor struct {
	a *agent
}

func (x *executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if rc.StoredTask == nil {
		return x.start(ctx, rc, q)
	}
	return x.answer(ctx, rc, q)
}

// Cancel stops the task's run, if one is under way (it ends interrupted,
// saved: `runner resume` goes on with it), and ends the task canceled.
func (x *executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	x.a.s.stop(rc.TaskID)
	ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateCanceled, x.message(rc, "canceled", nil))
	ev.Final = true
	return q.Write(ctx, ev)
}

// start starts a run of the plan with the message's inputs.
func (x *executor) start(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	s := x.a.s
	vars, err := x.vars(rc.Message)
	if err != nil {
		return x.end(ctx, rc, q, sdk.TaskStateRejected, err.Error(), nil)
	}
	r, err := runs.New(runs.Options{Plan: x.a.path, Vars: vars, Workdir: s.o.Workdir, Version: s.o.Version})
	if err != nil {
		return x.end(ctx, rc, q, sdk.TaskStateRejected, s.o.Mask.String(err.Error()), nil)
	}
	t := &task{board: r.Board, runID: r.Record.ID}
	s.setTask(rc.TaskID, t)
	s.o.Log.Info().Str("agent", x.a.name).Str("task", string(rc.TaskID)).Str("run", t.runID).Msg("A2A task started a run")
	if err := x.write(ctx, q, sdk.NewStatusUpdateEvent(rc, sdk.TaskStateWorking, x.message(rc, "run "+t.runID+" started", x.meta(t)))); err != nil {
		r.Close()
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.running(rc.TaskID, cancel)
	defer s.running(rc.TaskID, nil)
	res, err := r.Execute(runCtx, runs.Env{Log: s.o.Log, Mask: s.o.Mask, Observer: x.observer(ctx, rc, q), Warnings: io.Discard})
	return x.finish(ctx, rc, q, t, res, err)
}

// answer answers the input step the task's run waits at with the
// message (its data part, or its text for a form of one field), as
// `runner answer` does, then resumes the run.
func (x *executor) answer(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	s := x.a.s
	t := s.task(rc.TaskID)
	if t == nil {
		return x.end(ctx, rc, q, sdk.TaskStateFailed, "this server has no run for the task (was it restarted?)", nil)
	}
	ask := func(problem string) error {
		text, data := x.question(t, problem)
		ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateInputRequired, x.message(rc, text, data))
		ev.Final = true
		return x.write(ctx, q, ev)
	}
	label, visit, err := x.waitingStep(t, rc.Message)
	if err != nil {
		return ask(err.Error())
	}
	qn, err := runs.OpenQuestion(t.board, label, visit, s.o.Mask, io.Discard)
	if err != nil {
		return ask(err.Error())
	}
	if qn.Waiting {
		if err := steps.MayAnswer(qn.Input, qn.Identity); err != nil {
			qn.Close()
			return ask(err.Error())
		}
	}
	ans, err := answerOf(rc.Message, qn.Form)
	if err == nil {
		_, err = qn.Answer(ans, AnsweredBy)
	}
	qn.Close()
	if err != nil {
		return ask(s.o.Mask.String(err.Error()))
	}
	s.o.Log.Info().Str("agent", x.a.name).Str("task", string(rc.TaskID)).Str("run", t.runID).Str("step", label).Msg("A2A answer recorded; resuming the run")
	if err := x.write(ctx, q, sdk.NewStatusUpdateEvent(rc, sdk.TaskStateWorking, x.message(rc, "answered "+steps.VisitName(label, visit)+"; the run goes on", x.meta(t)))); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.running(rc.TaskID, cancel)
	defer s.running(rc.TaskID, nil)
	res, err := runs.Resume(runCtx, t.board, runs.ResumeOptions{}, runs.Env{Log: s.o.Log, Mask: s.o.Mask, Observer: x.observer(ctx, rc, q), Warnings: io.Discard})
	return x.finish(ctx, rc, q, t, res, err)
}

// finish ends the task as the run ended: completed with the outputs as
// an artifact, input-required with the question, failed, or canceled.
func (x *executor) finish(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue, t *task, res *runs.Result, err error) error {
	s := x.a.s
	if err != nil {
		return x.end(ctx, rc, q, sdk.TaskStateFailed, s.o.Mask.String(err.Error()), x.meta(t))
	}
	run := res.Board.Run()
	switch res.Status() {
	case board.StatusSucceeded:
		if res.OutputsErr != nil {
			return x.end(ctx, rc, q, sdk.TaskStateFailed, s.o.Mask.String(res.OutputsErr.Error()), x.meta(t))
		}
		art := sdk.NewArtifactEvent(rc, x.result(res)...)
		art.Artifact.Name = "outputs"
		art.Artifact.Description = "the run's outputs"
		art.LastChunk = true
		if err := x.write(ctx, q, art); err != nil {
			return err
		}
		return x.end(ctx, rc, q, sdk.TaskStateCompleted, "run "+t.runID+" succeeded", x.meta(t))
	case board.StatusWaiting:
		text, data := x.question(t, "")
		ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateInputRequired, x.message(rc, text, data))
		ev.Final = true
		return x.write(ctx, q, ev)
	case board.StatusInterrupted:
		return x.end(ctx, rc, q, sdk.TaskStateCanceled, "run "+t.runID+" was interrupted: "+s.o.Mask.String(run.Error), x.meta(t))
	default:
		return x.end(ctx, rc, q, sdk.TaskStateFailed, "run "+t.runID+" failed: "+s.o.Mask.String(run.Error), x.meta(t))
	}
}

// result is a succeeded run's artifact: the plan's declared outputs as a
// data part, or, for a plan that declares none, the output of its last
// step as text.
func (x *executor) result(res *runs.Result) []sdk.Part {
	if res.Outputs != nil {
		return []sdk.Part{sdk.DataPart{Data: res.Outputs}}
	}
	recs := res.Board.Steps()
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Status != board.StatusSucceeded || r.Parent != "" || len(r.Result) == 0 {
			continue
		}
		var v struct {
			Output any `json:"output"`
		}
		if json.Unmarshal(r.Result, &v) == nil && v.Output != nil {
			if str, ok := v.Output.(string); ok {
				return []sdk.Part{sdk.TextPart{Text: x.a.s.o.Mask.String(str)}}
			}
			b, _ := json.Marshal(v.Output)
			return []sdk.Part{sdk.TextPart{Text: x.a.s.o.Mask.String(string(b))}}
		}
	}
	return []sdk.Part{sdk.TextPart{Text: ""}}
}

// question is the input-required message: what waits and its form.
func (x *executor) question(t *task, problem string) (string, map[string]any) {
	b, err := board.Load(t.board)
	var waiting []board.WaitingInput
	if err == nil {
		waiting = b.Run().Waiting
	}
	var text strings.Builder
	if problem != "" {
		fmt.Fprintf(&text, "the answer was not taken: %s\n", problem)
	}
	data := x.meta(t)
	var list []any // not []map[string]any: the SDK's task store copies through gob, which knows only registered types
	for _, w := range waiting {
		fmt.Fprintf(&text, "step %s waits for an answer: %s\n", steps.VisitName(w.Label, w.Visit), w.Prompt)
		item := map[string]any{"step": w.Label, "visit": w.Visit, "prompt": w.Prompt}
		if len(w.Form) > 0 {
			var form any
			if json.Unmarshal(w.Form, &form) == nil {
				item["form"] = form
			}
		}
		list = append(list, item)
	}
	if len(list) > 0 {
		data["waiting"] = list
		text.WriteString("answer with a message to this task holding a data part of the form's fields")
	}
	return x.a.s.o.Mask.String(strings.TrimSpace(text.String())), data
}

// waitingStep is the input step an answer is for: the one named by the
// message's metadata "step" (LABEL or LABEL#VISIT), else the only one
// that waits.
func (x *executor) waitingStep(t *task, m *sdk.Message) (string, int, error) {
	b, err := board.Load(t.board)
	if err != nil {
		return "", 0, err
	}
	waiting := b.Run().Waiting
	if name, _ := m.Metadata["step"].(string); name != "" {
		for _, w := range waiting {
			if name == w.Label || name == steps.VisitName(w.Label, w.Visit) {
				return w.Label, w.Visit, nil
			}
		}
		return "", 0, fmt.Errorf("step %q does not wait for an answer", name)
	}
	switch len(waiting) {
	case 0:
		return "", 0, fmt.Errorf("run %s waits for no answer", t.runID)
	case 1:
		return waiting[0].Label, waiting[0].Visit, nil
	}
	names := make([]string, len(waiting))
	for i, w := range waiting {
		names[i] = steps.VisitName(w.Label, w.Visit)
	}
	return "", 0, fmt.Errorf("several steps wait (%s): name one in the message's metadata as \"step\"", strings.Join(names, ", "))
}

// answerOf is a message as an answer: its data part, or its text as the
// value of a form's only field.
func answerOf(m *sdk.Message, form *steps.Form) (map[string]any, error) {
	var text []string
	for _, p := range m.Parts {
		switch v := p.(type) {
		case sdk.DataPart:
			return v.Data, nil
		case *sdk.DataPart:
			return v.Data, nil
		case sdk.TextPart:
			text = append(text, v.Text)
		case *sdk.TextPart:
			text = append(text, v.Text)
		}
	}
	if form != nil && len(form.Fields) == 1 && len(text) > 0 {
		name := form.Fields[0].Name
		v, err := form.Parse(name, strings.TrimSpace(strings.Join(text, "\n")))
		if err != nil {
			return nil, err
		}
		return map[string]any{name: v}, nil
	}
	return nil, fmt.Errorf("give the answer as a data part of the form's fields")
}

// vars are a message's inputs: its data part's fields (each a var of the
// plan), and its text as the var `input` when the plan has one.
func (x *executor) vars(m *sdk.Message) (map[string]string, error) {
	out := map[string]string{}
	var text []string
	for _, p := range m.Parts {
		var data map[string]any
		switch v := p.(type) {
		case sdk.DataPart:
			data = v.Data
		case *sdk.DataPart:
			data = v.Data
		case sdk.TextPart:
			text = append(text, v.Text)
		case *sdk.TextPart:
			text = append(text, v.Text)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !x.hasVar(k) {
				return nil, fmt.Errorf("the plan has no input %q (its inputs: %s)", k, x.varNames())
			}
			switch v := data[k].(type) {
			case string:
				out[k] = v
			default:
				b, err := json.Marshal(v)
				if err != nil {
					return nil, fmt.Errorf("input %s: %w", k, err)
				}
				out[k] = string(b)
			}
		}
	}
	if _, given := out["input"]; !given && len(text) > 0 && x.hasVar("input") {
		out["input"] = strings.Join(text, "\n")
	}
	return out, nil
}

func (x *executor) hasVar(name string) bool {
	for _, v := range x.a.plan.Vars {
		if v.Name == name {
			return true
		}
	}
	return false
}

func (x *executor) varNames() string {
	if len(x.a.plan.Vars) == 0 {
		return "none"
	}
	names := make([]string, len(x.a.plan.Vars))
	for i, v := range x.a.plan.Vars {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// meta is what says which run a task is: its id and blackboard.json.
func (x *executor) meta(t *task) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	return map[string]any{"run_id": t.runID, "blackboard": t.board}
}

// message is an agent message of the task: text, and data when given.
func (x *executor) message(rc *a2asrv.RequestContext, text string, data map[string]any) *sdk.Message {
	parts := []sdk.Part{sdk.TextPart{Text: text}}
	if len(data) > 0 {
		parts = append(parts, sdk.DataPart{Data: data})
	}
	return sdk.NewMessageForTask(sdk.MessageRoleAgent, rc, parts...)
}

// end writes the task's final state.
func (x *executor) end(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue, state sdk.TaskState, text string, data map[string]any) error {
	ev := sdk.NewStatusUpdateEvent(rc, state, x.message(rc, text, data))
	ev.Final = true
	return x.write(ctx, q, ev)
}

// write puts an event on the queue. A task canceled meanwhile has ended:
// what its run says after that is dropped, not an error.
func (x *executor) write(ctx context.Context, q eventqueue.Queue, ev sdk.Event) error {
	err := q.Write(ctx, ev)
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

// observer streams steps starting and ending as working status updates.
func (x *executor) observer(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) *stepEvents {
	return &stepEvents{x: x, ctx: ctx, rc: rc, q: q}
}

type stepEvents struct {
	x   *executor
	ctx context.Context
	rc  *a2asrv.RequestContext
	q   eventqueue.Queue
	mu  sync.Mutex // one event at a time: parallel steps report together
}

func (o *stepEvents) StepStarted(label string, visit int, parent string) {
	o.send(fmt.Sprintf("step %s started", steps.VisitName(label, visit)),
		map[string]any{"step": label, "visit": visit, "parent": parent, "event": "started"})
}

func (o *stepEvents) StepFinished(rec board.StepRecord) {
	text := fmt.Sprintf("step %s %s", steps.VisitName(rec.Label, rec.Visit), rec.Status)
	data := map[string]any{"step": rec.Label, "visit": rec.Visit, "parent": rec.Parent, "event": "finished", "status": rec.Status}
	if rec.Error != "" {
		data["error"] = o.x.a.s.o.Mask.String(rec.Error)
	}
	o.send(text, data)
}

func (o *stepEvents) send(text string, data map[string]any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ev := sdk.NewStatusUpdateEvent(o.rc, sdk.TaskStateWorking, o.x.message(o.rc, text, data))
	if err := o.q.Write(o.ctx, ev); err != nil && o.ctx.Err() == nil {
		o.x.a.s.o.Log.Warn().Err(err).Str("task", string(o.rc.TaskID)).Msg("A2A progress event not sent")
	}
}
