package cue

import (
	"fmt"
	"strings"

	"github.com/envoyproxy/protoc-gen-validate/validate"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Expressions of the JSON mapping of scalar kinds. Integers and floats are
// also accepted as decimal strings, as protojson does.
const (
	intString    = `=~"^-?[0-9]+$"`
	floatString  = `=~"^-?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][-+]?[0-9]+)?$"`
	floatSpecial = `"NaN" | "Infinity" | "-Infinity"`
	// durationPattern is protojson's form of a Duration.
	durationPattern = `^-?[0-9]+(\.[0-9]{1,9})?s$`
)

// fieldExpr is the CUE expression for a field's value and whether the field
// must be present.
func (b *builder) fieldExpr(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) (string, bool) {
	switch {
	case fd.IsMap():
		return b.mapExpr(fd, rules)
	case fd.IsList():
		return b.listExpr(fd, rules)
	}
	return b.elemExpr(fd, rules).text, b.required(fd, rules)
}

func (b *builder) mapExpr(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) (string, bool) {
	var mr *validate.MapRules
	if rules != nil {
		mr = rules.GetMap()
	}
	key := "string"
	var values *validate.FieldRules
	var cons []string
	if mr != nil {
		values = mr.GetValues()
		if kr := mr.GetKeys(); kr != nil && fd.MapKey().Kind() == protoreflect.StringKind {
			if sc := b.stringRules(fd, kr.GetString_()); len(sc) > 0 {
				key = withRules("string", sc, false, "").text
			}
		}
		cons, _, _ = mapSize(mr)
		if len(cons) > 0 {
			b.imports["struct"] = true
		}
		if mr.GetNoSparse() {
			b.note(fd, "map.no_sparse")
		}
	}
	expr := fmt.Sprintf("{[%s]: %s}", key, b.elemExpr(fd.MapValue(), values).text)
	if len(cons) > 0 {
		expr += " & " + strings.Join(cons, " & ")
	}
	required := mr != nil && mr.GetMinPairs() > 0 && !mr.GetIgnoreEmpty()
	return expr, required
}

func (b *builder) listExpr(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) (string, bool) {
	var rr *validate.RepeatedRules
	if rules != nil {
		rr = rules.GetRepeated()
	}
	var items *validate.FieldRules
	var cons []string
	if rr != nil {
		items = rr.GetItems()
		cons, _, _ = listSize(rr)
		if len(cons) > 0 {
			b.imports["list"] = true
		}
	}
	expr := fmt.Sprintf("[...%s]", b.elemExpr(fd, items).text)
	if len(cons) > 0 {
		expr += " & " + strings.Join(cons, " & ")
		if rr.GetIgnoreEmpty() {
			expr = "[] | (" + expr + ")"
		}
	}
	required := rr != nil && rr.GetMinItems() > 0 && !rr.GetIgnoreEmpty()
	return expr, required
}

// mapSize is the CUE of a map's pair-count rules and their bounds (-1:
// none).
func mapSize(mr *validate.MapRules) (cons []string, minPairs, maxPairs int) {
	minPairs, maxPairs = -1, -1
	if mr.MinPairs != nil {
		minPairs = int(mr.GetMinPairs())
		cons = append(cons, fmt.Sprintf("struct.MinFields(%d)", mr.GetMinPairs()))
	}
	if mr.MaxPairs != nil {
		maxPairs = int(mr.GetMaxPairs())
		cons = append(cons, fmt.Sprintf("struct.MaxFields(%d)", mr.GetMaxPairs()))
	}
	return cons, minPairs, maxPairs
}

// listSize is the CUE of a list's item-count and uniqueness rules and
// their bounds (-1: none).
func listSize(rr *validate.RepeatedRules) (cons []string, minItems, maxItems int) {
	minItems, maxItems = -1, -1
	if rr.MinItems != nil {
		minItems = int(rr.GetMinItems())
		cons = append(cons, fmt.Sprintf("list.MinItems(%d)", rr.GetMinItems()))
	}
	if rr.MaxItems != nil {
		maxItems = int(rr.GetMaxItems())
		cons = append(cons, fmt.Sprintf("list.MaxItems(%d)", rr.GetMaxItems()))
	}
	if rr.GetUnique() {
		cons = append(cons, "list.UniqueItems()")
	}
	return cons, minItems, maxItems
}

// elemExpr is the expression of one value of the field (an element for
// repeated fields, the value for maps).
func (b *builder) elemExpr(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) expr {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		md := fd.Message()
		if e, ok := b.wellKnown(md.FullName(), fd, rules); ok {
			return e
		}
		if rules.GetMessage().GetSkip() {
			return raw("{...}")
		}
		b.refs[md.FullName()] = true
		return raw(DefName(md.FullName()))
	case protoreflect.EnumKind:
		return raw(b.enumExpr(fd, fd.Enum(), rules.GetEnum()))
	case protoreflect.StringKind:
		return withRules("string", b.stringRules(fd, rules.GetString_()), rules.GetString_().GetIgnoreEmpty(), `""`)
	case protoreflect.BytesKind:
		if rules.GetBytes() != nil {
			b.note(fd, "bytes rules (checked on decoded bytes)")
		}
		return withRules("string", nil, false, "")
	case protoreflect.BoolKind:
		if br := rules.GetBool(); br != nil && br.Const != nil {
			return raw(fmt.Sprintf("%t", br.GetConst()))
		}
		return raw("bool")
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return b.numberExpr(fd, "number", floatString+" | "+floatSpecial, scalarRules(rules))
	default:
		return b.numberExpr(fd, intType(fd.Kind()), intString, scalarRules(rules))
	}
}

// required reports whether a singular field must be present: required
// messages, and scalars whose zero value breaks their rules (protoc-gen-
// validate checks unset proto3 scalars as zero values).
func (b *builder) required(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) bool {
	if rules == nil {
		return false
	}
	if fd.Kind() == protoreflect.MessageKind {
		return rules.GetMessage().GetRequired() || rules.GetAny().GetRequired() ||
			rules.GetDuration().GetRequired() || rules.GetTimestamp().GetRequired()
	}
	if fd.HasPresence() {
		return false
	}
	return zeroFails(fd, rules)
}

func intType(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return "int32"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "uint32"
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "uint64"
	default:
		return "int64"
	}
}

// numberExpr is a number with its rules, or the decimal string form alt
// (which the fast path leaves to CUE).
func (b *builder) numberExpr(fd protoreflect.FieldDescriptor, base, alt string, rules protoreflect.Message) expr {
	cons, ignoreEmpty := b.numericRules(fd, rules)
	return numberWith(base, alt, cons, ignoreEmpty)
}

func numberWith(base, alt string, cons []constraint, ignoreEmpty bool) expr {
	e := withRules(base, cons, ignoreEmpty, "0")
	if len(cons) > 0 {
		e.text = "(" + e.text + ")"
	}
	e.text += " | " + alt
	return e
}

func (b *builder) enumExpr(fd protoreflect.FieldDescriptor, ed protoreflect.EnumDescriptor, er *validate.EnumRules) string {
	if ed.FullName() == "google.protobuf.NullValue" {
		return "null"
	}
	type val struct {
		name string
		num  int32
	}
	var vals []val
	values := ed.Values()
	for i := range values.Len() {
		v := values.Get(i)
		vals = append(vals, val{string(v.Name()), int32(v.Number())})
	}
	keep := func(v val) bool {
		if er == nil {
			return true
		}
		if er.Const != nil && v.num != er.GetConst() {
			return false
		}
		if len(er.GetIn()) > 0 && !containsInt(er.GetIn(), v.num) {
			return false
		}
		return !containsInt(er.GetNotIn(), v.num)
	}
	var alts []string
	seenNum := map[int32]bool{}
	for _, v := range vals {
		if keep(v) {
			alts = append(alts, quote(v.name))
		}
	}
	restricted := er != nil && (er.GetDefinedOnly() || er.Const != nil || len(er.GetIn()) > 0 || len(er.GetNotIn()) > 0)
	if restricted {
		for _, v := range vals {
			if keep(v) && !seenNum[v.num] {
				seenNum[v.num] = true
				alts = append(alts, fmt.Sprint(v.num))
			}
		}
		if !er.GetDefinedOnly() && er.Const == nil && len(er.GetIn()) == 0 {
			// not_in alone: any other number is allowed too.
			nums := make([]string, 0, len(er.GetNotIn()))
			for _, n := range er.GetNotIn() {
				nums = append(nums, fmt.Sprintf("!=%d", n))
			}
			alts = append(alts, "(int32 & "+strings.Join(nums, " & ")+")")
		}
	} else {
		alts = append(alts, "int32")
	}
	if len(alts) == 0 {
		return "_|_ // no value satisfies the rules"
	}
	return strings.Join(alts, " | ")
}

func containsInt(list []int32, n int32) bool {
	for _, v := range list {
		if v == n {
			return true
		}
	}
	return false
}

// wellKnown writes the JSON mapping of a google.protobuf well-known type,
// applying the field's rules where CUE can express them.
func (b *builder) wellKnown(name protoreflect.FullName, fd protoreflect.FieldDescriptor, rules *validate.FieldRules) (expr, bool) {
	switch name {
	case "google.protobuf.Any":
		ar := rules.GetAny()
		if len(ar.GetIn()) > 0 {
			alts := make([]string, 0, len(ar.GetIn()))
			for _, u := range ar.GetIn() {
				alts = append(alts, quote(u))
			}
			return raw(`#Any & {"@type": ` + strings.Join(alts, " | ") + "}"), true
		}
		if len(ar.GetNotIn()) > 0 {
			cons := make([]string, 0, len(ar.GetNotIn()))
			for _, u := range ar.GetNotIn() {
				cons = append(cons, "!="+quote(u))
			}
			return raw(`#Any & {"@type": ` + strings.Join(cons, " & ") + "}"), true
		}
		return raw("#Any"), true
	case "google.protobuf.Duration":
		if dr := rules.GetDuration(); dr != nil && fd != nil && (dr.Const != nil || dr.Lt != nil || dr.Lte != nil ||
			dr.Gt != nil || dr.Gte != nil || len(dr.In) > 0 || len(dr.NotIn) > 0) {
			b.note(fd, "duration range (policies see durations as seconds)")
		}
		return withRules("string", []constraint{{kind: consMatch, re: durationPattern}}, false, ""), true
	case "google.protobuf.Timestamp":
		b.imports["time"] = true
		if rules.GetTimestamp() != nil && fd != nil {
			b.note(fd, "timestamp rules")
		}
		return raw("time.Time"), true
	case "google.protobuf.FieldMask":
		return withRules("string", nil, false, ""), true
	case "google.protobuf.Struct":
		return raw("{...}"), true
	case "google.protobuf.Value":
		return raw("_"), true
	case "google.protobuf.ListValue":
		return raw("[...]"), true
	case "google.protobuf.Empty":
		return raw("close({})"), true
	case "google.protobuf.BoolValue":
		return raw("bool"), true
	case "google.protobuf.StringValue":
		return withRules("string", b.stringRules(fd, rules.GetString_()), rules.GetString_().GetIgnoreEmpty(), `""`), true
	case "google.protobuf.BytesValue":
		return withRules("string", nil, false, ""), true
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue":
		return b.numberExpr(fd, "number", floatString+" | "+floatSpecial, scalarRules(rules)), true
	case "google.protobuf.Int32Value":
		return b.numberExpr(fd, "int32", intString, scalarRules(rules)), true
	case "google.protobuf.UInt32Value":
		return b.numberExpr(fd, "uint32", intString, scalarRules(rules)), true
	case "google.protobuf.Int64Value":
		return b.numberExpr(fd, "int64", intString, scalarRules(rules)), true
	case "google.protobuf.UInt64Value":
		return b.numberExpr(fd, "uint64", intString, scalarRules(rules)), true
	}
	return expr{}, false
}

// quote writes s as a CUE double-quoted string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
