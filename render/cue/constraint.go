package cue

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The schema of a field's value is generated once, as data: a base type
// and constraints. The CUE text of the schema and the Go check of the fast
// path are both made from that data (expr), so that they cannot drift
// apart, and no CUE text is ever read back.

// passFunc reports whether a value certainly satisfies a constraint; false
// means "ask CUE", which also writes the message.
type passFunc func(v any) bool

// consKind says what a constraint requires.
type consKind int

const (
	consEqual    consKind = iota // the value is lit (a CUE literal)
	consNotEqual                 // the value is not lit
	consMinRunes                 // at least n runes
	consMaxRunes                 // at most n runes
	consMatch                    // matches the pattern re
	consNoMatch                  // does not match re
	consLess                     // < lit (a number)
	consLessEq                   // <= lit
	consMore                     // > lit
	consMoreEq                   // >= lit
	consAnyOf                    // one of alts holds
	consBuiltin                  // the CUE builtin lit (net.IP, ...)
)

// constraint is one rule of a generated value.
type constraint struct {
	kind consKind
	lit  string
	n    uint64
	re   string
	alts []constraint
}

// cue is the constraint in CUE.
func (c constraint) cue() string {
	switch c.kind {
	case consEqual, consBuiltin:
		return c.lit
	case consNotEqual:
		return "!=" + c.lit
	case consMinRunes:
		return fmt.Sprintf("strings.MinRunes(%d)", c.n)
	case consMaxRunes:
		return fmt.Sprintf("strings.MaxRunes(%d)", c.n)
	case consMatch:
		return "=~" + quote(c.re)
	case consNoMatch:
		return "!~" + quote(c.re)
	case consLess:
		return "<" + c.lit
	case consLessEq:
		return "<=" + c.lit
	case consMore:
		return ">" + c.lit
	case consMoreEq:
		return ">=" + c.lit
	case consAnyOf:
		alts := make([]string, len(c.alts))
		for i, a := range c.alts {
			alts[i] = a.cue()
		}
		return "(" + strings.Join(alts, " | ") + ")"
	}
	panic(fmt.Sprintf("unknown constraint kind %d", c.kind))
}

// check is the constraint in Go, or nil for a constraint the fast path
// leaves to CUE. A check may say no to a value CUE accepts (CUE then
// decides), never yes to one CUE rejects.
func (c constraint) check() passFunc {
	switch c.kind {
	case consMinRunes:
		return func(v any) bool { s, ok := v.(string); return ok && uint64(utf8.RuneCountInString(s)) >= c.n }
	case consMaxRunes:
		return func(v any) bool { s, ok := v.(string); return ok && uint64(utf8.RuneCountInString(s)) <= c.n }
	case consMatch, consNoMatch:
		re, err := regexp.Compile(c.re)
		if err != nil {
			return nil
		}
		want := c.kind == consMatch
		return func(v any) bool { s, ok := v.(string); return ok && re.MatchString(s) == want }
	case consLess, consLessEq, consMore, consMoreEq:
		bound, err := strconv.ParseFloat(c.lit, 64)
		if err != nil || strings.ContainsAny(c.lit, "eE") || math.Abs(bound) > 1<<53 {
			return nil
		}
		kind := c.kind
		return func(v any) bool {
			num, ok := v.(json.Number)
			if !ok {
				return false
			}
			f, err := strconv.ParseFloat(string(num), 64)
			if err != nil || math.Abs(f) > 1<<53 {
				return false // beyond exact floats: let CUE compare.
			}
			switch kind {
			case consLess:
				return f < bound
			case consLessEq:
				return f <= bound
			case consMore:
				return f > bound
			}
			return f >= bound
		}
	}
	return nil
}

// holdsAtZero reports whether the numeric constraint holds for 0.
func (c constraint) holdsAtZero() bool {
	f, _ := strconv.ParseFloat(c.lit, 64)
	switch c.kind {
	case consEqual:
		return f == 0
	case consNotEqual:
		return f != 0
	case consLess:
		return 0 < f
	case consLessEq:
		return 0 <= f
	case consMore:
		return 0 > f
	case consMoreEq:
		return 0 >= f
	case consAnyOf:
		for _, a := range c.alts {
			if a.holdsAtZero() {
				return true
			}
		}
		return false
	}
	return true
}

// expr is the generated schema of one value: its CUE text and what its
// fast-path check is made of (a base type and constraints), compiled only
// when a leaf of the fast path needs it.
type expr struct {
	text string
	// checked: every part has a Go check; base and cons are its parts.
	checked bool
	base    string
	cons    []constraint
}

// raw is an expression only CUE checks.
func raw(text string) expr { return expr{text: text} }

// pass compiles the fast path's check of e; nil when CUE must decide.
func (e expr) pass() passFunc {
	if !e.checked {
		return nil
	}
	checks := []passFunc{baseCheck(e.base)}
	for _, c := range e.cons {
		checks = append(checks, c.check())
	}
	return allOf(checks)
}

// baseCheck is the Go check of a base type, or nil.
func baseCheck(base string) passFunc {
	switch base {
	case "string":
		return func(v any) bool { _, ok := v.(string); return ok }
	case "number":
		return func(v any) bool {
			n, ok := v.(json.Number)
			if !ok {
				return false
			}
			_, err := n.Float64()
			return err == nil
		}
	case "int32":
		return intRange(math.MinInt32, math.MaxInt32)
	case "int64":
		return intRange(math.MinInt64, math.MaxInt64)
	case "uint32":
		return uintRange(math.MaxUint32)
	case "uint64":
		return uintRange(math.MaxUint64)
	}
	return nil
}

// withRules joins a base type with constraints; with ignoreEmpty the empty
// value is accepted as it is (and CUE decides).
func withRules(base string, cons []constraint, ignoreEmpty bool, empty string) expr {
	if len(cons) == 0 {
		return expr{text: base, checked: true, base: base}
	}
	parts := make([]string, 0, len(cons)+1)
	parts = append(parts, base)
	for _, c := range cons {
		parts = append(parts, c.cue())
	}
	text := strings.Join(parts, " & ")
	if ignoreEmpty {
		return raw(empty + " | (" + text + ")")
	}
	return expr{text: text, checked: true, base: base, cons: cons}
}

// allOf is the check that every one of checks passes; nil if one is nil.
func allOf(checks []passFunc) passFunc {
	for _, c := range checks {
		if c == nil {
			return nil
		}
	}
	return func(v any) bool {
		for _, c := range checks {
			if !c(v) {
				return false
			}
		}
		return true
	}
}

func intRange(lo, hi int64) passFunc {
	return func(v any) bool {
		num, ok := v.(json.Number)
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(string(num), 10, 64)
		return err == nil && n >= lo && n <= hi
	}
}

func uintRange(hi uint64) passFunc {
	return func(v any) bool {
		num, ok := v.(json.Number)
		if !ok {
			return false
		}
		n, err := strconv.ParseUint(string(num), 10, 64)
		return err == nil && n <= hi
	}
}
