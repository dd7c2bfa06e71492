package engine

import (
	"encoding/json"
	"strings"
)

// for_each on a parallel group or a sequence (a block): each item runs the
// whole block. Item i of block G is the visit G[i], as for a step; the
// block's steps in that item are labelled G[i]/LABEL, as a call's steps
// are CALL/LABEL, so every item's records, recordings and report rows are
// distinct and found again by label (Program.Node). Their expressions run
// in a frame of the item's own (one per item label) layered over the
// block's: steps.X there is the item's X when X is in the block, the
// run's otherwise, and item and index are the item's.

// isBlock reports whether n runs steps of its own in this process's
// interpreter as a group or a sequence (not a call).
func (n *Node) isBlock() bool { return n.Children != nil || n.Seq != nil }

// inItem is step k of a block instantiated in the block's item label: its
// label ITEM/LABEL, its expressions in the item's frame. Its own steps
// (a group or sequence inside the block) come along.
func (k *Node) inItem(item string) *Node {
	c := *k
	c.copyMore()
	s := *k.Step
	c.local = k.localLabel()
	s.Label = item + "/" + c.local
	c.Step = &s
	c.frame = item
	c.Children = inItemAll(k.Children, item)
	c.Seq = inItemAll(k.Seq, item)
	return &c
}

func inItemAll(ns []*Node, item string) []*Node {
	if ns == nil {
		return nil
	}
	out := make([]*Node, len(ns))
	for i, k := range ns {
		out[i] = k.inItem(item)
	}
	return out
}

// descendants are the steps inside block n, at any depth of groups and
// sequences (not a call's: those are the call's own frame).
func (n *Node) descendants() []*Node {
	var out []*Node
	var walk func([]*Node)
	walk = func(ns []*Node) {
		for _, k := range ns {
			out = append(out, k)
			walk(k.Children)
			walk(k.Seq)
		}
	}
	walk(n.Children)
	walk(n.Seq)
	return out
}

// descendant is the step of block item n whose own label is local.
func (n *Node) descendant(local string) *Node {
	for _, d := range n.descendants() {
		if d.localLabel() == local {
			return d
		}
	}
	return nil
}

// cutLast splits s at its last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// blockFrame is the evaluator of block item n's steps, made on first use;
// known says whether v is the item's value (else it is read from the
// item list recorded for the block, as a resumed run or a worker
// elsewhere has it).
func (r *Runner) blockFrame(n *Node, v any, known bool) *evaluator {
	r.mu.Lock()
	e := r.frames[n.Label]
	r.mu.Unlock()
	if e != nil && !known {
		return e
	}
	if !known {
		v = r.recordedItem(n.item.each.Label, n.item.index)
	}
	if e == nil {
		e = &evaluator{steps: map[string]any{}, base: map[string]any{}, parent: r.evalOf(n.item.each)}
		for _, d := range n.descendants() {
			e.steps[d.localLabel()] = stateView(StatusPending, nil, "", 0, 0, zeroResult(d))
		}
		r.mu.Lock()
		if prev := r.frames[n.Label]; prev != nil {
			e = prev
		} else {
			r.frames[n.Label] = e
		}
		r.mu.Unlock()
	}
	e.mu.Lock()
	e.base = map[string]any{"item": v, "index": n.item.index}
	e.mu.Unlock()
	return e
}

// recordedItem is item index of the last item list recorded for for_each
// label (nil when there is none).
func (r *Runner) recordedItem(label string, index int) any {
	var raw json.RawMessage
	for _, rec := range r.Board.Recordings() {
		if rec.Kind == KindItems && rec.Label == label {
			raw = rec.Response
		}
	}
	var list []any
	if raw == nil || json.Unmarshal(raw, &list) != nil || index >= len(list) {
		return nil
	}
	return list[index]
}

// ParentLabel is the label of the step whose visit holds a visit of label
// ("" for a top-level step or a label not in the plan): the for_each step
// of an item, the item of a for_each block's step, the call of a callee's
// top-level step, the group or sequence of a child. A replay marks the
// groups a part of a recording was inside from it, when only their
// grandchildren finished in that part.
func (p *Program) ParentLabel(label string) string {
	if l, _, ok := SplitItemLabel(label); ok {
		if p.Node(l) != nil {
			return l
		}
		return ""
	}
	n := p.Node(label)
	if n == nil || n.Step == nil {
		return ""
	}
	par := n.Step.Parent
	if n.frame == "" {
		if par == nil {
			return ""
		}
		return par.Label
	}
	// In a frame (a call's or a block item's): the frame itself holds the
	// frame's top steps.
	if par == nil {
		return n.frame // a callee's top-level step
	}
	if l, _, ok := SplitItemLabel(n.frame); ok {
		if _, last, _ := cutLast("/"+l, "/"); last == par.Label {
			return n.frame // a step directly in a block item
		}
	}
	return n.frame + "/" + par.Label
}
