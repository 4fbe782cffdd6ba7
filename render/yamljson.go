package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/legate-dev/legate/render/jsonparse"
)

// parseDocuments parses every YAML document of data (JSON is parsed as YAML
// too, so both keep line and column positions). Empty documents are dropped.
func parseDocuments(data []byte) ([]*yaml.Node, error) {
	if looksLikeJSON(data) {
		root, err := jsonparse.Parse(data)
		if err == nil {
			return []*yaml.Node{root}, nil
		}
		// Fall through: the YAML parser gives its own message.
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
			root := doc.Content[0]
			if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
				continue
			}
			docs = append(docs, root)
		}
	}
}

// looksLikeJSON reports whether data starts like a JSON object.
func looksLikeJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// jsonWriter turns a YAML node tree into compact single-line JSON for
// protojson, remembering at which byte each node's text starts so that a
// protojson error column can be mapped back to the YAML node. All output
// is ASCII, so protojson's rune columns equal byte offsets.
type jsonWriter struct {
	buf   []byte
	offs  []int
	nodes []*yaml.Node
	depth int
	// budget, when set, bounds what every resource of the render expands
	// to together and stops the writer when the render is stopped;
	// charged is what this resource has charged it so far.
	budget  *budget
	charged int64
}

// Bounds on what YAML aliases can make of a document: a recursive alias
// would never end, nested aliases can grow exponentially (the render's
// budget bounds that), and nested merge keys could make one mapping
// enumerate exponentially many keys.
const (
	maxDepth       = 200
	maxMergedPairs = 10000
)

func (w *jsonWriter) reset() {
	w.depth, w.charged = 0, 0
	w.buf = w.buf[:0]
	w.offs = w.offs[:0]
	w.nodes = w.nodes[:0]
}

// cost is what the resource written so far holds: its text, and nodeCost
// for each value.
func (w *jsonWriter) cost() int64 {
	return int64(len(w.buf)) + int64(len(w.offs))*nodeCost
}

// charge moves what was written since the last charge to the render's
// budget, every chargeStep bytes (always when final), and stops the
// writer, at node n, when the budget is spent or the render stopped.
func (w *jsonWriter) charge(n *yaml.Node, final bool) error {
	c := w.cost()
	if w.budget == nil || (!final && c-w.charged < chargeStep) {
		return nil
	}
	ok := w.budget.charge(c - w.charged)
	w.charged = c
	if w.budget.stopped.Load() {
		return errStopped
	}
	if !ok {
		return &nodeError{node: n, msg: w.budget.message(), rule: RuleLimit}
	}
	return nil
}

// refund gives back what this resource charged, when what was written
// is dropped and written again.
func (w *jsonWriter) refund() {
	if w.budget != nil {
		w.budget.used.Add(-w.charged)
	}
	w.charged = 0
}

// pooled reports whether the writer is small enough to keep for the next
// resource: one that held a large resource gives its memory back.
func (w *jsonWriter) pooled() bool {
	return cap(w.buf) <= 1<<20 && cap(w.offs) <= 1<<16
}

func (w *jsonWriter) mark(n *yaml.Node) {
	w.offs = append(w.offs, len(w.buf))
	w.nodes = append(w.nodes, n)
}

// nodeAt returns the node whose text starts at or before the 1-based
// column col of the output.
func (w *jsonWriter) nodeAt(col int) *yaml.Node {
	off := col - 1
	lo, hi := 0, len(w.offs)
	for lo < hi {
		mid := (lo + hi) / 2
		if w.offs[mid] <= off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return nil
	}
	return w.nodes[lo-1]
}

// writeResource writes a mapping node as a JSON object, leaving out the
// keys in skip (such as "@type" on a resource whose type is known).
// The writer starts afresh; what it writes is charged to its budget.
func (w *jsonWriter) writeResource(n *yaml.Node, skip ...string) error {
	w.reset()
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		return nodeErrorf(n, "expected a mapping, found %s", kindName(n))
	}
	if err := w.writeMapping(n, skip); err != nil {
		return err
	}
	return w.charge(n, true)
}

func (w *jsonWriter) write(n *yaml.Node) error {
	n = resolveAlias(n)
	if w.depth >= maxDepth {
		return nodeErrorf(n, "document nests more than %d levels deep (a recursive YAML alias?)", maxDepth)
	}
	if err := w.charge(n, false); err != nil {
		return err
	}
	w.depth++
	defer func() { w.depth-- }()
	switch n.Kind {
	case yaml.MappingNode:
		return w.writeMapping(n, nil)
	case yaml.SequenceNode:
		w.mark(n)
		w.buf = append(w.buf, '[')
		for i, c := range n.Content {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if err := w.write(c); err != nil {
				return err
			}
		}
		w.buf = append(w.buf, ']')
		return nil
	case yaml.ScalarNode:
		w.mark(n)
		return w.writeScalar(n)
	default:
		return nodeErrorf(n, "unsupported YAML node")
	}
}

func (w *jsonWriter) writeMapping(n *yaml.Node, skip []string) error {
	w.mark(n)
	w.buf = append(w.buf, '{')
	first := true
	err := eachPair(n, func(k, v *yaml.Node) error {
		for _, s := range skip {
			if k.Value == s {
				return nil
			}
		}
		if !first {
			w.buf = append(w.buf, ',')
		}
		first = false
		w.mark(k)
		w.buf = appendJSONString(w.buf, k.Value)
		w.buf = append(w.buf, ':')
		return w.write(v)
	})
	w.buf = append(w.buf, '}')
	return err
}

// eachPair calls fn for every key/value of a mapping, expanding YAML merge
// keys ("<<"): at most maxMergedPairs keys and mappings through them, so
// that nested merges of repeated aliases cannot make one call enumerate
// exponentially many keys.
func eachPair(n *yaml.Node, fn func(k, v *yaml.Node) error) error {
	merged := 0
	return eachPairDepth(n, fn, 0, &merged)
}

func eachPairDepth(n *yaml.Node, fn func(k, v *yaml.Node) error, depth int, merged *int) error {
	if depth > maxDepth {
		return nodeErrorf(n, "merge keys nest too deep (a recursive YAML alias?)")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nodeErrorf(k, "mapping keys must be scalars")
		}
		if depth > 0 {
			*merged++
		}
		if *merged > maxMergedPairs {
			return &nodeError{node: k, rule: RuleLimit, msg: fmt.Sprintf("merge keys bring more than %d keys into this mapping (repeated YAML aliases?)", maxMergedPairs)}
		}
		if k.Tag == "!!merge" {
			v = resolveAlias(v)
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, s := range srcs {
				s = resolveAlias(s)
				if s.Kind != yaml.MappingNode {
					return nodeErrorf(s, "a merge key needs a mapping")
				}
				*merged++
				if err := eachPairDepth(s, fn, depth+1, merged); err != nil {
					return err
				}
			}
			continue
		}
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (w *jsonWriter) writeScalar(n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		w.buf = append(w.buf, "null"...)
	case "!!bool":
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		if err != nil {
			return nodeErrorf(n, "invalid boolean %q", n.Value)
		}
		w.buf = strconv.AppendBool(w.buf, b)
	case "!!int":
		v := strings.ReplaceAll(n.Value, "_", "")
		if i, err := strconv.ParseInt(v, 0, 64); err == nil {
			w.buf = strconv.AppendInt(w.buf, i, 10)
		} else if u, err := strconv.ParseUint(v, 0, 64); err == nil {
			w.buf = strconv.AppendUint(w.buf, u, 10)
		} else {
			w.buf = appendJSONString(w.buf, n.Value)
		}
	case "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		switch {
		case err == nil && !math.IsInf(f, 0) && !math.IsNaN(f):
			w.buf = append(w.buf, n.Value...)
			if strings.HasPrefix(n.Value, ".") || strings.HasPrefix(n.Value, "+") || strings.ContainsAny(n.Value, "_") {
				w.buf = w.buf[:len(w.buf)-len(n.Value)]
				w.buf = strconv.AppendFloat(w.buf, f, 'g', -1, 64)
			}
		case strings.HasSuffix(strings.ToLower(n.Value), "inf"):
			if strings.HasPrefix(n.Value, "-") {
				w.buf = append(w.buf, `"-Infinity"`...)
			} else {
				w.buf = append(w.buf, `"Infinity"`...)
			}
		case strings.EqualFold(n.Value, ".nan"):
			w.buf = append(w.buf, `"NaN"`...)
		default:
			w.buf = appendJSONString(w.buf, n.Value)
		}
	default:
		w.buf = appendJSONString(w.buf, n.Value)
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaping everything that is
// not printable ASCII.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			r1, r2 := utf16Pair(r)
			b = appendU(b, r1)
			b = appendU(b, r2)
		} else {
			b = appendU(b, r)
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	default:
		return "another kind of node"
	}
}

// mapValue returns the value of key in a mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	_, v := mapEntry(n, key)
	return v
}

// mapEntry returns the first key node named key in a mapping node and its
// value, or nils.
func mapEntry(n *yaml.Node, key string) (k, v *yaml.Node) {
	if n == nil {
		return nil, nil
	}
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	_ = eachPair(n, func(kn, vn *yaml.Node) error {
		if kn.Value == key && k == nil {
			k, v = kn, vn
		}
		return nil
	})
	return k, v
}

// nodeError is a problem attached to a YAML node.
type nodeError struct {
	node *yaml.Node
	msg  string
	// rule is RuleLimit for a budget the node went over; empty for a
	// problem of the node itself.
	rule string
}

func (e *nodeError) Error() string { return e.msg }

func nodeErrorf(n *yaml.Node, format string, args ...any) error {
	return &nodeError{node: n, msg: fmt.Sprintf(format, args...)}
}
