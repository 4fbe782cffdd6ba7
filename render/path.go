package render

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A field path names a field inside a resource the way Envoy's docs do:
// `virtual_hosts[0].routes[2].route.cluster`, with `["key"]` for map keys.
// Paths are built as []string segments: a field name, "[N]" or `["key"]`.

func joinPath(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// splitPath is the inverse of joinPath.
func splitPath(p string) []string {
	var segs []string
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := closingBracket(p)
			segs = append(segs, p[:end])
			p = p[end:]
		default:
			i := strings.IndexAny(p, ".[")
			if i < 0 {
				i = len(p)
			}
			segs = append(segs, p[:i])
			p = p[i:]
		}
	}
	return segs
}

// closingBracket returns the index just past the "]" closing p[0] == '[',
// skipping over a quoted key.
func closingBracket(p string) int {
	if len(p) > 1 && p[1] == '"' {
		for i := 2; i < len(p); i++ {
			switch p[i] {
			case '\\':
				i++
			case '"':
				if i+1 < len(p) && p[i+1] == ']' {
					return i + 2
				}
			}
		}
		return len(p)
	}
	if i := strings.IndexByte(p, ']'); i >= 0 {
		return i + 1
	}
	return len(p)
}

func indexSeg(i int) string { return "[" + strconv.Itoa(i) + "]" }

func keySeg(k string) string { return "[" + strconv.Quote(k) + "]" }

// findNode follows a path from a resource's node as far as the input goes
// and returns the deepest node reached. A field matches its proto name or
// its JSON (lowerCamelCase) name, as protojson accepts both.
func findNode(root *yaml.Node, segs []string) *yaml.Node {
	n := root
	for _, s := range segs {
		n = resolveAlias(n)
		var next *yaml.Node
		switch {
		case strings.HasPrefix(s, `["`):
			if k, err := strconv.Unquote(s[1 : len(s)-1]); err == nil {
				next = mapValue(n, k)
			}
		case strings.HasPrefix(s, "["):
			i, err := strconv.Atoi(s[1 : len(s)-1])
			if err == nil && n.Kind == yaml.SequenceNode && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
			}
		default:
			next = mapValue(n, s)
			if next == nil {
				next = mapValue(n, jsonName(s))
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// jsonName converts a proto field name to protojson's lowerCamelCase name.
func jsonName(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	var b strings.Builder
	up := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		b.WriteByte(c)
	}
	return b.String()
}

// pathTo finds target under root and returns the path to it using the
// keys as written, or nil when target is not under root.
func pathTo(root, target *yaml.Node) []string {
	var segs []string
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if n == target {
			return true
		}
		if len(segs) > maxDepth {
			return false
		}
		n = resolveAlias(n)
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k == target {
					segs = append(segs, k.Value)
					return true
				}
				segs = append(segs, k.Value)
				if walk(v) {
					return true
				}
				segs = segs[:len(segs)-1]
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				segs = append(segs, indexSeg(i))
				if walk(c) {
					return true
				}
				segs = segs[:len(segs)-1]
			}
		}
		return false
	}
	if !walk(root) {
		return nil
	}
	return segs
}
