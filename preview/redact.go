package preview

import (
	"github.com/cncf/xds/go/udpa/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
)

// redactSensitive clears, in place, every field Envoy's API marks
// (udpa.annotations.sensitive) as secret — private keys, passwords, HMAC
// secrets — however deep, including inside typed_config Anys, and reports
// whether it cleared any. Views of a configuration never show key
// material, even one inlined against the rules.
func redactSensitive(m protoreflect.Message) bool {
	cleared := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if proto.GetExtension(fd.Options(), annotations.E_Sensitive).(bool) {
			m.Clear(fd)
			cleared = true
			return true
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				cleared = redactMessage(l.Get(i).Message()) || cleared
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				cleared = redactMessage(mv.Message()) || cleared
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			cleared = redactMessage(v.Message()) || cleared
		}
		return true
	})
	return cleared
}

// redactMessage redacts m, unpacking an Any to reach its content.
func redactMessage(m protoreflect.Message) bool {
	a, ok := m.Interface().(*anypb.Any)
	if !ok {
		return redactSensitive(m)
	}
	inner, err := a.UnmarshalNew()
	if err != nil {
		if _, unknown := protoregistry.GlobalTypes.FindMessageByURL(a.GetTypeUrl()); unknown != nil {
			return false // a type this build does not know: shown as bytes
		}
		a.Value, a.TypeUrl = nil, ""
		return true
	}
	if !redactSensitive(inner.ProtoReflect()) {
		return false
	}
	if err := a.MarshalFrom(inner); err != nil {
		a.Value = nil
	}
	return true
}
