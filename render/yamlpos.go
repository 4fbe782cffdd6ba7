package render

import (
	"fmt"
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

// YAMLFieldPathAt is the inverse of YAMLFieldPosition: the field path
// ("spec.resources[1].value.name") of the node of the first document of
// data that starts at line:column, or else of the last node starting
// before it. A document legate writes itself (an object's spec turned
// into YAML) has no meaning to its author by line: its field paths do.
// It returns "" when data does not parse or the position precedes every
// node.
func YAMLFieldPathAt(data []byte, line, column int) string {
	docs, err := parseDocuments(data)
	if err != nil || len(docs) == 0 || line <= 0 {
		return ""
	}
	before := func(n *yaml.Node) bool {
		return n.Line < line || (n.Line == line && n.Column <= column)
	}
	found, best := false, ""
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := k.Value
				if path != "" {
					p = path + "." + k.Value
				}
				if !before(k) {
					return
				}
				found, best = true, p
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if !before(c) {
					return
				}
				p := fmt.Sprintf("%s[%d]", path, i)
				found, best = true, p
				walk(c, p)
			}
		}
	}
	walk(docs[0], "")
	if !found {
		return ""
	}
	return best
}
