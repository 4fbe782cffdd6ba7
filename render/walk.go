package render

import (
	"strconv"
	"strings"
	"sync"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
)

// violation is one failed rule at a field path inside a resource.
type violation struct {
	path []string
	msg  string
}

// visitor is called for every message of a resource tree, including the
// messages packed in Any fields, with the path that leads to it.
type visitor func(path []string, m proto.Message)

var anyName = (&anypb.Any{}).ProtoReflect().Descriptor().FullName()

// walkMessage validates m with its PGV rules (ValidateAll), then descends
// into every field, unpacking each Any and validating what it holds, which
// ValidateAll does not do by itself. visit sees every message.
func walkMessage(m proto.Message, path []string, visit visitor, out *[]violation) {
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			flattenPGV(err, m.ProtoReflect().Descriptor(), path, out)
		}
	}
	walkFields(m.ProtoReflect(), path, visit, out)
}

func walkFields(rm protoreflect.Message, path []string, visit visitor, out *[]violation) {
	if visit != nil {
		visit(path, rm.Interface())
	}
	if rm.Descriptor().FullName() == anyName {
		a := rm.Interface().(*anypb.Any)
		inner, err := anypb.UnmarshalNew(a, proto.UnmarshalOptions{Resolver: protoregistry.GlobalTypes})
		if err != nil {
			*out = append(*out, violation{path: clonePath(path), msg: "cannot unpack " + strconv.Quote(a.GetTypeUrl()) + ": " + err.Error()})
			return
		}
		walkMessage(inner, path, visit, out)
		return
	}
	filterConfig := rm.Descriptor().FullName() == filterConfigName
	rm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if filterConfig && fd.Name() == "config" && emptyAny(v.Message()) {
			// `config: {}` in a FilterConfig enables the filter on the
			// route with the listener's configuration, as Envoy reads it.
			return true
		}
		// Only messages hold further fields. A map field's own kind is
		// always message (its entries are), so a map is judged by the kind
		// of its values: map<string, string> has nothing to walk.
		if fd.IsMap() {
			if fd.MapValue().Message() == nil {
				return true
			}
		} else if fd.Message() == nil {
			return true
		}
		name := string(fd.Name())
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walkFields(l.Get(i).Message(), append(path, name, indexSeg(i)), visit, out)
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				walkFields(mv.Message(), append(path, name, keySeg(k.String())), visit, out)
				return true
			})
		default:
			walkFields(v.Message(), append(path, name), visit, out)
		}
		return true
	})
}

func clonePath(p []string) []string { return append([]string(nil), p...) }

var filterConfigName = (&routev3.FilterConfig{}).ProtoReflect().Descriptor().FullName()

// emptyAny reports whether an Any message has neither a type nor a value.
func emptyAny(m protoreflect.Message) bool {
	a, ok := m.Interface().(*anypb.Any)
	return ok && a.GetTypeUrl() == "" && len(a.GetValue()) == 0
}

// pgvError is the shape of every protoc-gen-validate error type.
type pgvError interface {
	Field() string
	Reason() string
	Cause() error
}

const embeddedFailed = "embedded message failed validation"

// flattenPGV turns a (nested) PGV error into violations whose paths use
// proto field names, translating the Go field names PGV reports.
func flattenPGV(err error, md protoreflect.MessageDescriptor, path []string, out *[]violation) {
	if multi, ok := err.(interface{ AllErrors() []error }); ok {
		for _, e := range multi.AllErrors() {
			flattenPGV(e, md, path, out)
		}
		return
	}
	pe, ok := err.(pgvError)
	if !ok {
		*out = append(*out, violation{path: clonePath(path), msg: err.Error()})
		return
	}
	field, suffix := pe.Field(), ""
	if i := strings.IndexByte(field, '['); i >= 0 {
		field, suffix = field[:i], field[i:]
	}
	name, next := goFieldToProto(md, field)
	segs := append(clonePath(path), name)
	if suffix != "" {
		key := suffix[1 : len(suffix)-1]
		if next != nil && next.IsMap() && next.MapKey().Kind() == protoreflect.StringKind {
			segs = append(segs, keySeg(key))
		} else {
			segs = append(segs, suffix)
		}
	}
	if cause := pe.Cause(); cause != nil && pe.Reason() == embeddedFailed && next != nil {
		var sub protoreflect.MessageDescriptor
		if next.IsMap() {
			sub = next.MapValue().Message()
		} else {
			sub = next.Message()
		}
		if sub != nil {
			flattenPGV(cause, sub, segs, out)
			return
		}
	}
	msg := pe.Reason()
	if cause := pe.Cause(); cause != nil {
		msg += ": " + cause.Error()
	}
	*out = append(*out, violation{path: segs, msg: msg})
}

// goNames caches, per message, the proto field (or oneof) name for each Go
// field name folded to lower case without underscores.
var goNames sync.Map // protoreflect.FullName → map[string]goField

type goField struct {
	name string
	fd   protoreflect.FieldDescriptor
}

func foldName(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "_", ""))
}

func goFieldToProto(md protoreflect.MessageDescriptor, goName string) (string, protoreflect.FieldDescriptor) {
	if md == nil {
		return goName, nil
	}
	v, ok := goNames.Load(md.FullName())
	if !ok {
		m := map[string]goField{}
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			m[foldName(string(fd.Name()))] = goField{string(fd.Name()), fd}
		}
		oneofs := md.Oneofs()
		for i := 0; i < oneofs.Len(); i++ {
			od := oneofs.Get(i)
			if _, taken := m[foldName(string(od.Name()))]; !taken {
				m[foldName(string(od.Name()))] = goField{name: string(od.Name())}
			}
		}
		v, _ = goNames.LoadOrStore(md.FullName(), m)
	}
	if f, ok := v.(map[string]goField)[foldName(goName)]; ok {
		return f.name, f.fd
	}
	return goName, nil
}
