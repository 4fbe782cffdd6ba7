package render

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// unknownFieldHint returns ", did you mean x" for an unknown field that
// protojson refused at path segs under a resource of descriptor md, naming
// the closest field of the message that holds it. It follows the input
// through repeated fields, maps and typed Anys (by their "@type"), and
// returns "" where it cannot tell which message holds the field.
func unknownFieldHint(md protoreflect.MessageDescriptor, root *yaml.Node, segs []string) string {
	if len(segs) == 0 || len(segs) > maxDepth {
		return ""
	}
	n := root
	var fd protoreflect.FieldDescriptor
	for _, s := range segs[:len(segs)-1] {
		n = resolveAlias(n)
		switch {
		case strings.HasPrefix(s, `["`):
			k, err := strconv.Unquote(s[1 : len(s)-1])
			if err != nil || fd == nil || !fd.IsMap() || fd.MapValue().Message() == nil {
				return ""
			}
			md, n = fd.MapValue().Message(), mapValue(n, k)
		case strings.HasPrefix(s, "["):
			i, err := strconv.Atoi(s[1 : len(s)-1])
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return ""
			}
			n = n.Content[i]
		default:
			fd = md.Fields().ByName(protoreflect.Name(s))
			if fd == nil {
				fd = md.Fields().ByJSONName(s)
			}
			if fd == nil || fd.Message() == nil {
				return ""
			}
			n = mapValue(n, s)
			md = fd.Message()
			if !fd.IsMap() && md.FullName() == "google.protobuf.Any" {
				mt, err := protoregistry.GlobalTypes.FindMessageByURL(scalar(mapValue(n, "@type")))
				if err != nil {
					return ""
				}
				md = mt.Descriptor()
			}
		}
		if n == nil {
			return ""
		}
	}
	fields := md.Fields()
	names := make([]string, 0, 2*fields.Len())
	for i := range fields.Len() {
		names = append(names, string(fields.Get(i).Name()))
	}
	word := segs[len(segs)-1]
	if s := Suggest(word, names); s != "" {
		if strings.Contains(word, "_") || !strings.Contains(s, "_") {
			return ", did you mean " + s
		}
		// The user writes lowerCamelCase: answer in the same form.
		return ", did you mean " + jsonName(s)
	}
	return ""
}
