// Package jsonparse parses JSON into the node tree go.yaml.in/yaml/v3
// builds, with the lines and columns the renderer's diagnostics name. It
// is the renderer's fast path for .json files and JSON-shaped documents,
// and a package of its own so that it is fuzzed without compiling the
// renderer (hack/fuzz-targets.sh, docs/testing.md).
package jsonparse

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// Parse parses one JSON value into the same node tree the YAML parser
// builds, with 1-based lines and columns. Anything it rejects the
// renderer hands to the YAML parser, which accepts every JSON text.
func Parse(data []byte) (*yaml.Node, error) {
	p := &parser{data: data, line: 1, colVal: 1}
	p.skipSpace()
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errorf("unexpected text after the JSON value")
	}
	return n, nil
}

type parser struct {
	data      []byte
	pos       int
	line      int
	lineStart int
	colPos    int
	colVal    int
	slab      []yaml.Node
	stack     []*yaml.Node // children of the open containers
	depth     int          // open objects and arrays
}

// collect moves the children pushed since mark into an exact-size slice.
func (p *parser) collect(mark int) []*yaml.Node {
	c := make([]*yaml.Node, len(p.stack)-mark)
	copy(c, p.stack[mark:])
	p.stack = p.stack[:mark]
	return c
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// column counts runes since the start of the line, resuming from the last
// call so that long single-line documents stay linear.
func (p *parser) column() int {
	if p.colPos < p.lineStart {
		p.colPos, p.colVal = p.lineStart, 1
	}
	for _, c := range p.data[p.colPos:p.pos] {
		if c&0xc0 != 0x80 {
			p.colVal++
		}
	}
	p.colPos = p.pos
	return p.colVal
}

func (p *parser) node(kind yaml.Kind, tag string) *yaml.Node {
	if len(p.slab) == 0 {
		p.slab = make([]yaml.Node, 256)
	}
	n := &p.slab[0]
	p.slab = p.slab[1:]
	n.Kind, n.Tag, n.Line, n.Column = kind, tag, p.line, p.column()
	return n
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '\n':
			p.pos++
			p.line++
			p.lineStart = p.pos
		case ' ', '\t', '\r':
			p.pos++
		default:
			return
		}
	}
}

// MaxDepth bounds how deep objects and arrays may nest, as
// encoding/json does (no Envoy resource comes near it).
const MaxDepth = 10000

func (p *parser) value() (*yaml.Node, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		// Objects and arrays recurse: bound the depth so that a file of
		// nested brackets is an error, not a stack overflow.
		if p.depth >= MaxDepth {
			return nil, p.errorf("nesting deeper than %d levels", MaxDepth)
		}
		p.depth++
		defer func() { p.depth-- }()
		if c == '{' {
			return p.object()
		}
		return p.array()
	case c == '"':
		n := p.node(yaml.ScalarNode, "!!str")
		s, err := p.str()
		n.Value = s
		n.Style = yaml.DoubleQuotedStyle
		return n, err
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range [...]struct{ text, tag string }{{"true", "!!bool"}, {"false", "!!bool"}, {"null", "!!null"}} {
			if len(p.data)-p.pos >= len(lit.text) && string(p.data[p.pos:p.pos+len(lit.text)]) == lit.text {
				n := p.node(yaml.ScalarNode, lit.tag)
				n.Value = lit.text
				p.pos += len(lit.text)
				return n, nil
			}
		}
		return nil, p.errorf("invalid literal")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errorf("unexpected character %q", c)
	}
}

func (p *parser) object() (*yaml.Node, error) {
	n := p.node(yaml.MappingNode, "!!map")
	mark := len(p.stack)
	p.pos++
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return n, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected a string key")
		}
		k := p.node(yaml.ScalarNode, "!!str")
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		k.Value = s
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':'")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.stack = append(p.stack, k, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			n.Content = p.collect(mark)
			return n, nil
		default:
			return nil, p.errorf("expected ',' or '}'")
		}
	}
}

func (p *parser) array() (*yaml.Node, error) {
	n := p.node(yaml.SequenceNode, "!!seq")
	mark := len(p.stack)
	p.pos++
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return n, nil
	}
	for {
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.stack = append(p.stack, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			n.Content = p.collect(mark)
			return n, nil
		default:
			return nil, p.errorf("expected ',' or ']'")
		}
	}
}

func (p *parser) number() (*yaml.Node, error) {
	start := p.pos
	tag := "!!int"
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '.' || c == 'e' || c == 'E' {
			tag = "!!float"
		} else if !(c >= '0' && c <= '9') && c != '-' && c != '+' {
			break
		}
		p.pos++
	}
	text := string(p.data[start:p.pos])
	if _, err := strconv.ParseFloat(text, 64); err != nil || !jsonNumber(text) {
		return nil, p.errorf("invalid number %q", text)
	}
	p.pos = start
	n := p.node(yaml.ScalarNode, tag)
	p.pos += len(text)
	n.Value = text
	return n, nil
}

// jsonNumber reports whether text is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? (strconv accepts more,
// such as "00", "1." or "+1").
func jsonNumber(text string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(text) && text[i] == '-' {
		i++
	}
	switch {
	case i < len(text) && text[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(text) && text[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(text)
}

// str reads a JSON string starting at the opening quote.
func (p *parser) str() (string, error) {
	p.pos++
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.errorf("control character in a string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.data) {
			break
		}
		e := p.data[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
					p.pos += 2
					r2, ok := p.hex4()
					if !ok {
						return "", p.errorf("invalid \\u escape")
					}
					r = utf16.DecodeRune(r, r2)
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.errorf("invalid escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}
