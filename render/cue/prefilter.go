package cue

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// passFunc reports whether a value certainly satisfies a constraint; false
// means "ask CUE", which also writes the message.
type passFunc func(v any) bool

// prefilter compiles the common shapes of generated leaf constraints
// (a base type, rune counts, patterns, numeric bounds) to Go, so that the
// values that pass never reach CUE. Expressions it does not recognize get
// nil: every value goes to CUE. A conjunct it cannot read (a disjunction,
// a pattern split at " & ") makes the whole expression unrecognized.
func prefilter(expr string) passFunc {
	numeric := false
	for _, alt := range []string{" | " + intString, " | " + floatString + " | " + floatSpecial} {
		if rest, ok := strings.CutSuffix(expr, alt); ok {
			expr, numeric = strings.TrimSuffix(strings.TrimPrefix(rest, "("), ")"), true
			break
		}
	}
	var checks []passFunc
	for _, c := range strings.Split(expr, " & ") {
		f := conjunct(c)
		if f == nil {
			return nil
		}
		checks = append(checks, f)
	}
	return func(v any) bool {
		if _, isNum := v.(json.Number); isNum != numeric {
			return false
		}
		for _, f := range checks {
			if !f(v) {
				return false
			}
		}
		return true
	}
}

func conjunct(c string) passFunc {
	switch c {
	case "string":
		return func(v any) bool { _, ok := v.(string); return ok }
	case "number":
		return func(v any) bool { _, err := v.(json.Number).Float64(); return err == nil }
	case "int32":
		return intRange(math.MinInt32, math.MaxInt32)
	case "int64":
		return intRange(math.MinInt64, math.MaxInt64)
	case "uint32":
		return uintRange(math.MaxUint32)
	case "uint64":
		return uintRange(math.MaxUint64)
	}
	if n, ok := strings.CutPrefix(c, "strings.MinRunes("); ok {
		min, err := strconv.Atoi(strings.TrimSuffix(n, ")"))
		if err != nil {
			return nil
		}
		return func(v any) bool { s, ok := v.(string); return ok && utf8.RuneCountInString(s) >= min }
	}
	if n, ok := strings.CutPrefix(c, "strings.MaxRunes("); ok {
		max, err := strconv.Atoi(strings.TrimSuffix(n, ")"))
		if err != nil {
			return nil
		}
		return func(v any) bool { s, ok := v.(string); return ok && utf8.RuneCountInString(s) <= max }
	}
	for _, op := range []string{"=~", "!~"} {
		if q, ok := strings.CutPrefix(c, op); ok {
			pat, err := strconv.Unquote(q)
			if err != nil {
				return nil
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil
			}
			want := op == "=~"
			return func(v any) bool { s, ok := v.(string); return ok && re.MatchString(s) == want }
		}
	}
	for _, op := range []string{">=", "<=", ">", "<"} {
		if n, ok := strings.CutPrefix(c, op); ok {
			bound, err := strconv.ParseFloat(n, 64)
			if err != nil || strings.ContainsAny(n, "eE") {
				return nil
			}
			return func(v any) bool {
				num, ok := v.(json.Number)
				if !ok {
					return false
				}
				f, err := strconv.ParseFloat(string(num), 64)
				if err != nil || math.Abs(f) > 1<<53 || math.Abs(bound) > 1<<53 {
					return false // beyond exact floats: let CUE compare.
				}
				switch op {
				case ">=":
					return f >= bound
				case "<=":
					return f <= bound
				case ">":
					return f > bound
				}
				return f < bound
			}
		}
	}
	return nil
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
