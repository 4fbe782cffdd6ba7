package cue

import (
	"encoding/base64"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// normalize turns a decoded resource into the plain value policies are
// unified with: proto (snake_case) field names only, enums by name, 64-bit
// integers as numbers, google.protobuf.Duration as a number of seconds,
// wrappers as their value, and Any as its "@type" plus the packed fields
// inline (the JSON mapping). Fields that are not set are absent.
//
// keep limits the conversion to the fields a policy reads (nil: all).
func normalize(m protoreflect.Message, keep *mask) map[string]any {
	out := make(map[string]any, 8)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		if keep == nil || keep.list || keep.fields == nil {
			out[name] = fieldValue(fd, v, nil)
			return true
		}
		if sub, ok := keep.fields[name]; ok {
			out[name] = fieldValue(fd, v, sub)
		}
		return true
	})
	return out
}

func fieldValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, keep *mask) any {
	switch {
	case fd.IsMap():
		mv := v.Map()
		out := make(map[string]any, mv.Len())
		mv.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			out[k.String()] = singular(fd.MapValue(), v, nil)
			return true
		})
		return out
	case fd.IsList():
		var elem *mask
		if keep != nil && keep.list {
			elem = keep.elem
		}
		l := v.List()
		out := make([]any, l.Len())
		for i := range l.Len() {
			out[i] = singular(fd, l.Get(i), elem)
		}
		return out
	}
	return singular(fd, v, keep)
}

func singular(fd protoreflect.FieldDescriptor, v protoreflect.Value, keep *mask) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return message(v.Message(), keep)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return int64(v.Enum())
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return v.Uint()
	default:
		return v.Int()
	}
}

// seconds is a google.protobuf.Duration in a normalized value. Policies
// compare it as a number of seconds; messages print it as "1.5s".
type seconds float64

// message converts a message value, applying the JSON mapping of the
// well-known types.
func message(m protoreflect.Message, keep *mask) any {
	md := m.Descriptor()
	name := md.FullName()
	if !strings.HasPrefix(string(name), "google.protobuf.") {
		return normalize(m, keep)
	}
	fields := md.Fields()
	switch name {
	case "google.protobuf.Duration", "google.protobuf.Timestamp":
		secs := m.Get(fields.ByName("seconds")).Int()
		nanos := m.Get(fields.ByName("nanos")).Int()
		if name == "google.protobuf.Timestamp" {
			return time.Unix(secs, nanos).UTC().Format(time.RFC3339Nano)
		}
		return seconds(float64(secs) + float64(nanos)/1e9)
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		fd := fields.ByName("value")
		return singular(fd, m.Get(fd), nil)
	case "google.protobuf.Any":
		return anyValue(m, keep)
	case "google.protobuf.Struct":
		return structValue(m)
	case "google.protobuf.Value":
		return valueValue(m)
	case "google.protobuf.ListValue":
		return listValue(m)
	}
	return normalize(m, keep)
}

func anyValue(m protoreflect.Message, keep *mask) any {
	fields := m.Descriptor().Fields()
	url := m.Get(fields.ByName("type_url")).String()
	out := map[string]any{"@type": url}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if err != nil {
		return out
	}
	inner := mt.New()
	if err := (proto.UnmarshalOptions{}).Unmarshal(m.Get(fields.ByName("value")).Bytes(), inner.Interface()); err != nil {
		return out
	}
	switch v := message(inner, keep).(type) {
	case map[string]any:
		for k, x := range v {
			out[k] = x
		}
	default:
		// Well-known types packed in an Any keep their JSON form in "value".
		out["value"] = v
	}
	return out
}

func structValue(m protoreflect.Message) map[string]any {
	fd := m.Descriptor().Fields().ByName("fields")
	mv := m.Get(fd).Map()
	out := make(map[string]any, mv.Len())
	mv.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		out[k.String()] = valueValue(v.Message())
		return true
	})
	return out
}

func listValue(m protoreflect.Message) []any {
	l := m.Get(m.Descriptor().Fields().ByName("values")).List()
	out := make([]any, l.Len())
	for i := range l.Len() {
		out[i] = valueValue(l.Get(i).Message())
	}
	return out
}

func valueValue(m protoreflect.Message) any {
	od := m.Descriptor().Oneofs().ByName("kind")
	fd := m.WhichOneof(od)
	if fd == nil {
		return nil
	}
	v := m.Get(fd)
	switch fd.Name() {
	case "number_value":
		return v.Float()
	case "string_value":
		return v.String()
	case "bool_value":
		return v.Bool()
	case "struct_value":
		return structValue(v.Message())
	case "list_value":
		return listValue(v.Message())
	}
	return nil
}
