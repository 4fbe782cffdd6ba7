package render

import (
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// YAMLFieldPosition returns the 1-based line and column of a field path
// ("sources[0].git.url") in the first document of data: the key of the
// last field when present, else the deepest part of the path the
// document has. It lets other packages that decode YAML with
// sigs.k8s.io/yaml name the place of an error. Zero means unknown.
func YAMLFieldPosition(data []byte, field string) (line, column int) {
	docs, err := parseDocuments(data)
	if err != nil || len(docs) == 0 {
		return 0, 0
	}
	segs := splitPath(field)
	n := docs[0]
	if len(segs) > 0 && !strings.HasPrefix(segs[len(segs)-1], "[") {
		parent := findNode(n, segs[:len(segs)-1])
		if k := mapKey(parent, segs[len(segs)-1]); k != nil {
			return k.Line, k.Column
		}
	}
	n = findNode(n, segs)
	return n.Line, n.Column
}

// YAMLSyntaxError reports whether data fails to parse as YAML, with the
// line, column and message of the first syntax error.
func YAMLSyntaxError(data []byte) (line, column int, msg string, bad bool) {
	_, err := parseDocuments(data)
	if err == nil {
		return 0, 0, "", false
	}
	d := syntaxDiagnostic("", data, err)
	return d.Pos.Line, d.Pos.Column, d.Message, true
}

// mapKey returns the key node of key in a mapping node, or nil.
func mapKey(n *yaml.Node, key string) *yaml.Node {
	k, _ := mapEntry(n, key)
	return k
}
