package cue

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/envoyproxy/protoc-gen-validate/validate"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Regular expressions protoc-gen-validate uses for its well-known header
// rules, in strict and lax form.
const (
	headerNameStrict  = `^:?[0-9a-zA-Z!#$%&'*+-.^_|~` + "`" + `]+$`
	headerValueStrict = `^[^\x00-\x08\x0A-\x1F\x7F]*$`
	headerLax         = `^[^\x00\n\r]*$`
	uuidRE            = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
)

// stringRules translates protoc-gen-validate string rules to CUE
// constraints; rules CUE cannot express are noted.
func (b *builder) stringRules(fd protoreflect.FieldDescriptor, sr *validate.StringRules) []constraint {
	if sr == nil {
		return nil
	}
	var cons []constraint
	if sr.Const != nil {
		cons = append(cons, constraint{kind: consEqual, lit: quote(sr.GetConst())})
	}
	runes := func(k consKind, n uint64) {
		b.imports["strings"] = true
		cons = append(cons, constraint{kind: k, n: n})
	}
	match := func(re string) { cons = append(cons, constraint{kind: consMatch, re: re}) }
	if sr.Len != nil {
		runes(consMinRunes, sr.GetLen())
		runes(consMaxRunes, sr.GetLen())
	}
	if sr.MinLen != nil {
		runes(consMinRunes, sr.GetMinLen())
	}
	if sr.MaxLen != nil {
		runes(consMaxRunes, sr.GetMaxLen())
	}
	if (sr.LenBytes != nil || sr.MinBytes != nil || sr.MaxBytes != nil) && fd != nil {
		b.note(fd, "string byte length")
	}
	if sr.Pattern != nil {
		match(sr.GetPattern())
	}
	if sr.Prefix != nil {
		match("^" + regexp.QuoteMeta(sr.GetPrefix()))
	}
	if sr.Suffix != nil {
		match(regexp.QuoteMeta(sr.GetSuffix()) + "$")
	}
	if sr.Contains != nil {
		match(regexp.QuoteMeta(sr.GetContains()))
	}
	if sr.NotContains != nil {
		cons = append(cons, constraint{kind: consNoMatch, re: regexp.QuoteMeta(sr.GetNotContains())})
	}
	if len(sr.GetIn()) > 0 {
		alts := make([]constraint, 0, len(sr.GetIn()))
		for _, s := range sr.GetIn() {
			alts = append(alts, constraint{kind: consEqual, lit: quote(s)})
		}
		cons = append(cons, constraint{kind: consAnyOf, alts: alts})
	}
	for _, s := range sr.GetNotIn() {
		cons = append(cons, constraint{kind: consNotEqual, lit: quote(s)})
	}
	builtin := func(name string) {
		b.imports["net"] = true
		cons = append(cons, constraint{kind: consBuiltin, lit: name})
	}
	switch wk := sr.GetWellKnown().(type) {
	case *validate.StringRules_Ip:
		builtin("net.IP")
	case *validate.StringRules_Ipv4:
		builtin("net.IPv4")
	case *validate.StringRules_Ipv6:
		builtin("net.IPv6")
	case *validate.StringRules_Uuid:
		match(uuidRE)
	case *validate.StringRules_WellKnownRegex:
		strict := sr.Strict == nil || sr.GetStrict()
		re := headerLax
		switch {
		case strict && wk.WellKnownRegex == validate.KnownRegex_HTTP_HEADER_NAME:
			re = headerNameStrict
		case strict && wk.WellKnownRegex == validate.KnownRegex_HTTP_HEADER_VALUE:
			re = headerValueStrict
		}
		match(re)
	case nil:
	default:
		if fd != nil {
			b.note(fd, "string well_known "+strings.TrimPrefix(fmt.Sprintf("%T", wk), "*validate.StringRules_"))
		}
	}
	return cons
}

// scalarRules returns the numeric rule message set in rules (Int32Rules,
// DoubleRules, ...), or nil.
func scalarRules(rules *validate.FieldRules) protoreflect.Message {
	if rules == nil {
		return nil
	}
	m := rules.ProtoReflect()
	od := m.Descriptor().Oneofs().ByName("type")
	fd := m.WhichOneof(od)
	if fd == nil || fd.Kind() != protoreflect.MessageKind {
		return nil
	}
	switch fd.Name() {
	case "string", "bytes", "bool", "enum", "repeated", "map", "any", "duration", "timestamp":
		return nil
	}
	return m.Get(fd).Message()
}

// numericRules translates the const/lt/lte/gt/gte/in/not_in fields shared by
// every numeric rule message.
func (b *builder) numericRules(_ protoreflect.FieldDescriptor, rm protoreflect.Message) ([]constraint, bool) {
	if rm == nil {
		return nil, false
	}
	get := func(name protoreflect.Name) (string, bool) {
		fd := rm.Descriptor().Fields().ByName(name)
		if fd == nil || !rm.Has(fd) {
			return "", false
		}
		return number(rm.Get(fd), fd.Kind()), true
	}
	var cons []constraint
	if c, ok := get("const"); ok {
		cons = append(cons, constraint{kind: consEqual, lit: c})
	}
	// bound is the first of the two rules set (strict, then inclusive).
	bound := func(strict, inclusive protoreflect.Name, strictKind, inclusiveKind consKind) *constraint {
		if v, ok := get(strict); ok {
			return &constraint{kind: strictKind, lit: v}
		}
		if v, ok := get(inclusive); ok {
			return &constraint{kind: inclusiveKind, lit: v}
		}
		return nil
	}
	lower := bound("gt", "gte", consMore, consMoreEq)
	upper := bound("lt", "lte", consLess, consLessEq)
	if lower != nil && upper != nil && exclusiveRange(rm) {
		// protoc-gen-validate reads gt > lt as "outside the range".
		cons = append(cons, constraint{kind: consAnyOf, alts: []constraint{*upper, *lower}})
	} else {
		for _, c := range []*constraint{lower, upper} {
			if c != nil {
				cons = append(cons, *c)
			}
		}
	}
	for _, list := range []struct {
		name protoreflect.Name
		in   bool
	}{{"in", true}, {"not_in", false}} {
		fd := rm.Descriptor().Fields().ByName(list.name)
		if fd == nil {
			continue
		}
		l := rm.Get(fd).List()
		if l.Len() == 0 {
			continue
		}
		var vals []constraint
		for i := range l.Len() {
			vals = append(vals, constraint{kind: consEqual, lit: number(l.Get(i), fd.Kind())})
		}
		if list.in {
			cons = append(cons, constraint{kind: consAnyOf, alts: vals})
		} else {
			for _, v := range vals {
				v.kind = consNotEqual
				cons = append(cons, v)
			}
		}
	}
	ignore := false
	if fd := rm.Descriptor().Fields().ByName("ignore_empty"); fd != nil {
		ignore = rm.Get(fd).Bool()
	}
	return cons, ignore
}

// exclusiveRange reports whether a rule message has a lower bound above its
// upper bound.
func exclusiveRange(rm protoreflect.Message) bool {
	val := func(names ...protoreflect.Name) (float64, bool) {
		for _, n := range names {
			fd := rm.Descriptor().Fields().ByName(n)
			if fd != nil && rm.Has(fd) {
				f, _ := strconv.ParseFloat(number(rm.Get(fd), fd.Kind()), 64)
				return f, true
			}
		}
		return 0, false
	}
	lo, ok1 := val("gt", "gte")
	hi, ok2 := val("lt", "lte")
	return ok1 && ok2 && lo > hi
}

func number(v protoreflect.Value, k protoreflect.Kind) string {
	switch k {
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		s := strconv.FormatFloat(v.Float(), 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10)
	default:
		return strconv.FormatInt(v.Int(), 10)
	}
}

// zeroFails reports whether a scalar's zero value breaks its rules, which
// makes the field required in practice.
func zeroFails(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) bool {
	switch fd.Kind() {
	case protoreflect.StringKind:
		sr := rules.GetString_()
		if sr == nil || sr.GetIgnoreEmpty() {
			return false
		}
		if sr.GetMinLen() > 0 || sr.GetLen() > 0 || sr.GetMinBytes() > 0 || sr.GetLenBytes() > 0 ||
			sr.GetPrefix() != "" || sr.GetSuffix() != "" || sr.GetContains() != "" ||
			(sr.Const != nil && sr.GetConst() != "") {
			return true
		}
		if len(sr.GetIn()) > 0 && !containsString(sr.GetIn(), "") {
			return true
		}
		if sr.Pattern != nil {
			if re, err := regexp.Compile(sr.GetPattern()); err == nil && !re.MatchString("") {
				return true
			}
		}
		switch sr.GetWellKnown().(type) {
		case *validate.StringRules_Email, *validate.StringRules_Hostname, *validate.StringRules_Ip,
			*validate.StringRules_Ipv4, *validate.StringRules_Ipv6, *validate.StringRules_Uri,
			*validate.StringRules_Address, *validate.StringRules_Uuid:
			return true
		case *validate.StringRules_WellKnownRegex:
			return (sr.Strict == nil || sr.GetStrict()) && sr.GetWellKnownRegex() == validate.KnownRegex_HTTP_HEADER_NAME
		}
		return false
	case protoreflect.EnumKind:
		er := rules.GetEnum()
		if er == nil {
			return false
		}
		return (er.Const != nil && er.GetConst() != 0) || (len(er.GetIn()) > 0 && !containsInt(er.GetIn(), 0)) ||
			containsInt(er.GetNotIn(), 0) || (er.GetDefinedOnly() && fd.Enum().Values().ByNumber(0) == nil)
	case protoreflect.BoolKind:
		return rules.GetBool().GetConst()
	case protoreflect.BytesKind:
		br := rules.GetBytes()
		return br != nil && !br.GetIgnoreEmpty() && (br.GetMinLen() > 0 || br.GetLen() > 0)
	}
	rm := scalarRules(rules)
	if rm == nil {
		return false
	}
	cons, ignore := (&builder{imports: map[string]bool{}}).numericRules(fd, rm)
	if ignore || len(cons) == 0 {
		return false
	}
	return !zeroSatisfies(cons)
}

// zeroSatisfies reports whether 0 meets every numeric constraint.
func zeroSatisfies(cons []constraint) bool {
	for _, c := range cons {
		if !c.holdsAtZero() {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
