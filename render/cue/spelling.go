package cue

import (
	"strings"
	"sync"
	"unicode"

	"cuelang.org/go/cue/ast"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// protoFieldNames is the set of proto (snake_case) field names of every
// registered message, built once.
var protoFieldNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	var addMessages func(ms protoreflect.MessageDescriptors)
	addMessages = func(ms protoreflect.MessageDescriptors) {
		for i := range ms.Len() {
			m := ms.Get(i)
			fs := m.Fields()
			for j := range fs.Len() {
				names[string(fs.Get(j).Name())] = true
			}
			addMessages(m.Messages())
		}
	}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		addMessages(fd.Messages())
		return true
	})
	return names
})

// snakeCaseLabels rewrites the field labels of a policy written in Envoy's
// JSON spelling (connectTimeout) to the proto spelling (connect_timeout)
// that resources are normalised to before they meet a policy, so that both
// spellings Envoy accepts work in policies too. Only labels whose snake
// form is a known proto field name, and which are not one themselves, are
// rewritten; map keys and helpers are left alone.
func snakeCaseLabels(f *ast.File) {
	known := protoFieldNames()
	ast.Walk(f, func(n ast.Node) bool {
		field, ok := n.(*ast.Field)
		if !ok {
			return true
		}
		id, ok := field.Label.(*ast.Ident)
		if !ok || strings.HasPrefix(id.Name, "#") || strings.HasPrefix(id.Name, "_") || known[id.Name] {
			return true
		}
		if snake := toSnake(id.Name); snake != id.Name && known[snake] {
			renamed := ast.NewIdent(snake)
			ast.SetPos(renamed, id.Pos())
			field.Label = renamed
		}
		return true
	}, nil)
}

// toSnake turns lowerCamel into snake_case the way protoc derives JSON
// names backwards: connectTimeout → connect_timeout.
func toSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
