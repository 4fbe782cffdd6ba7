package render

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// enumScan walks a resource's YAML alongside its message descriptor to
// read enum values the way Envoy's loader does: case-insensitively
// (`codec_type: auto` is AUTO). It runs only after protojson refused an
// enum value, so valid input pays nothing for it.
type enumScan struct {
	// fixed counts values rewritten to their upper-case name.
	fixed int
	// bad holds the values that name no value of their enum.
	bad   map[*yaml.Node]protoreflect.EnumDescriptor
	depth int
}

// upperEnums rewrites, in place, the enum values of the resource at root
// that match a value of their enum only when upper-cased, and remembers
// the values that match none.
func upperEnums(root *yaml.Node, md protoreflect.MessageDescriptor, skip []string) *enumScan {
	s := &enumScan{bad: map[*yaml.Node]protoreflect.EnumDescriptor{}}
	s.message(root, md, skip)
	return s
}

func (s *enumScan) message(n *yaml.Node, md protoreflect.MessageDescriptor, skip []string) {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode || s.depth > maxDepth {
		return
	}
	s.depth++
	defer func() { s.depth-- }()
	fields := md.Fields()
	_ = eachPair(n, func(k, v *yaml.Node) error {
		for _, sk := range skip {
			if k.Value == sk {
				return nil
			}
		}
		fd := fields.ByName(protoreflect.Name(k.Value))
		if fd == nil {
			fd = fields.ByJSONName(k.Value)
		}
		if fd == nil {
			return nil
		}
		v = resolveAlias(v)
		switch {
		case fd.IsMap():
			if v.Kind != yaml.MappingNode {
				return nil
			}
			_ = eachPair(v, func(_, mv *yaml.Node) error {
				s.value(mv, fd.MapValue())
				return nil
			})
		case fd.IsList():
			if v.Kind != yaml.SequenceNode {
				return nil
			}
			for _, e := range v.Content {
				s.value(e, fd)
			}
		default:
			s.value(v, fd)
		}
		return nil
	})
}

// value handles one singular value of field fd.
func (s *enumScan) value(v *yaml.Node, fd protoreflect.FieldDescriptor) {
	v = resolveAlias(v)
	switch fd.Kind() {
	case protoreflect.EnumKind:
		ed := fd.Enum()
		if v.Kind != yaml.ScalarNode || ed.FullName() == "google.protobuf.NullValue" || v.Tag == "!!int" || v.Tag == "!!null" {
			return
		}
		if ed.Values().ByName(protoreflect.Name(v.Value)) != nil {
			return
		}
		if up := strings.ToUpper(v.Value); ed.Values().ByName(protoreflect.Name(up)) != nil {
			v.Value = up
			s.fixed++
			return
		}
		s.bad[v] = ed
	case protoreflect.MessageKind, protoreflect.GroupKind:
		md := fd.Message()
		switch {
		case md.FullName() == anyName:
			url := scalar(mapValue(v, "@type"))
			mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
			if err != nil {
				return
			}
			if inner := mt.Descriptor(); !strings.HasPrefix(string(inner.FullName()), "google.protobuf.") {
				s.message(v, inner, []string{"@type"})
			}
		case strings.HasPrefix(string(md.FullName()), "google.protobuf."):
			// Well-known types have their own JSON forms and no enums.
		default:
			s.message(v, md, nil)
		}
	}
}

// enumMessage explains a value that names no value of its enum, listing
// the valid names and suggesting the closest.
func enumMessage(value string, ed protoreflect.EnumDescriptor) string {
	vals := ed.Values()
	names := make([]string, 0, vals.Len())
	best, bestDist := "", -1
	for i := 0; i < vals.Len(); i++ {
		name := string(vals.Get(i).Name())
		names = append(names, name)
		if d := EditDistance(strings.ToUpper(value), name); bestDist < 0 || d < bestDist {
			best, bestDist = name, d
		}
	}
	msg := fmt.Sprintf("%q is not one of %s", value, strings.Join(names, ", "))
	if bestDist >= 0 && bestDist <= max(2, len(best)/3) {
		msg += "; did you mean " + best + "?"
	}
	return msg
}

// EditDistance is the Levenshtein distance between a and b, counted in
// runes, for "did you mean" suggestions (enum values, annotation keys,
// node IDs).
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
