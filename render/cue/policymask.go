package cue

import (
	"cuelang.org/go/cue"
)

// Masks: which parts of a resource a policy rule can see, so that only
// those parts are evaluated and cached.

// mask is the part of a resource a constraint can see.
type mask struct {
	fields map[string]*mask // nil: keep the whole value
	elem   *mask            // for lists: the mask of every element
	list   bool
}

// buildMask follows the structure of a constraint. Wherever it is not a
// plain open struct or a [...X] list, the value below is kept whole.
func buildMask(v cue.Value) *mask {
	if op, _ := v.Expr(); op == cue.OrOp || op == cue.AndOp {
		return nil
	}
	switch v.IncompleteKind() {
	case cue.StructKind:
		if v.IsClosed() || v.LookupPath(cue.MakePath(cue.AnyString)).Exists() {
			return nil
		}
		it, err := v.Fields(cue.Optional(true))
		if err != nil {
			return nil
		}
		m := &mask{fields: map[string]*mask{}}
		for it.Next() {
			m.fields[it.Selector().Unquoted()] = buildMask(it.Value())
		}
		return m
	case cue.ListKind:
		// Only [...X]: no fixed elements, one constraint for all.
		it, err := v.List()
		if err != nil || it.Next() {
			return nil
		}
		elem := v.LookupPath(cue.MakePath(cue.AnyIndex))
		if !elem.Exists() {
			return nil
		}
		return &mask{list: true, elem: buildMask(elem)}
	}
	return nil
}
