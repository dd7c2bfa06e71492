package engine

import (
	"errors"
	"fmt"
)

// A sequence is a child of a parallel group made of steps run in order
// (`steps:`), so one branch of a fan-out can read, then summarise. Its
// steps are its children (Parent: the sequence); a goto among them stays
// among them: end finishes the sequence, fail fails it.

// sequence runs a sequence visit's steps in order, following gotos within
// it. Steps that completed before the run was resumed are not run again:
// the walk goes on from them as they went.
func (it *interp[C]) sequence(c C, n *Node, visit int) (Result, error) {
	r := it.r
	var err error
	for pc := 0; pc < len(n.Seq); {
		ch := n.Seq[pc]
		if err = it.halted(c, n.Label, ch); err != nil {
			break // the run stopped, or a step of another branch failed: the rest does not start
		}
		var jump string
		if rec, ok := r.alreadyDone(n.Label, ch.Label); ok {
			jump = rec.Goto
		} else if jump, err = it.visit(c, ch, n.Label); err != nil {
			break
		}
		if pc, err = n.seqNext(pc, jump); err != nil {
			break
		}
	}
	outputs := make(map[string]any, len(n.Seq))
	for _, ch := range n.Seq {
		outputs[ch.localLabel()] = r.evalOf(ch).get(ch.localLabel())["output"]
	}
	return Result{Output: outputs}, err
}

// halted is why a sequence or a call does not start its next step ch: the
// run stopped, or a step of another branch failed (fail_fast). A replay
// runs a group's children one at a time, so the moment the run stopped
// may come, replayed, before a sibling's steps that ran beside it: a step
// the recording has started before that moment and is visited (visit
// then does as recorded), as is one done before the part was resumed (it
// is history); one it does not have is not started.
func (it *interp[C]) halted(c C, parent string, ch *Node) error {
	stop := it.stopped(c)
	sibling := errors.Is(it.d.Cause(c), errSiblingFailed)
	if stop == nil && !sibling {
		return nil
	}
	if r := it.r; r.Script != nil {
		if _, _, ok := r.Script.Times(ch.Label, r.nextVisit(ch.Label)); ok || r.resumedHas(parent, ch.Label) {
			return nil
		}
	}
	if stop != nil {
		return stop
	}
	return errSiblingFailed
}

// seqNext is where a sequence goes after its step pc returned jump.
func (n *Node) seqNext(pc int, jump string) (int, error) {
	switch jump {
	case "":
		return pc + 1, nil
	case "end":
		return len(n.Seq), nil
	case "fail":
		return 0, &RunError{Status: StatusFailed, Label: n.Seq[pc].Label, Err: errors.New("the branch chose fail")}
	}
	for i, ch := range n.Seq {
		if ch.localLabel() == jump { // its label is CALL/X or G[i]/X in a call or a for_each item
			return i, nil
		}
	}
	return 0, &RunError{Status: StatusFailed, Label: n.Seq[pc].Label, Err: fmt.Errorf("goto %q: no such step in sequence %s", jump, n.Label)}
}

// inSequence reports whether n is a step of a sequence (a goto may stay
// in it).
func (n *Node) inSequence() bool {
	if n.item != nil {
		return false
	}
	// A callee's top-level steps are the call's children; a goto among
	// them stays in the call, as in a sequence.
	return (n.Step.Parent != nil && n.Step.Parent.Sequence) || (n.Step.Parent == nil && n.frame != "")
}

// resumedHas reports whether child of group completed before the run was
// resumed (alreadyDone, without taking it).
func (r *Runner) resumedHas(group, child string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.done[group][child]
	return ok
}
