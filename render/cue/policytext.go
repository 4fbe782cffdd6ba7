package cue

import (
	"slices"
	"strings"

	"cuelang.org/go/cue/scanner"
	"cuelang.org/go/cue/token"
)

// Messages: where in a policy file a broken rule is, and its text.

// constraintText is the source of a policy rule at pos, for messages.
func (p *policy) constraintText(pos token.Pos) string {
	line := pos.Line()
	if line < 1 || line > len(p.lines) {
		return ""
	}
	text := p.lines[line-1]
	if c := pos.Column(); c >= 1 && c <= len(text) {
		text = text[c-1:]
	}
	return strings.TrimSpace(firstExpr(text))
}

// firstExpr cuts a line's text after the expression it starts with: at a
// comment, a top-level comma, or a closing bracket the text did not open
// (the end of an enclosing list or struct on the same line). It reads the
// text with CUE's own scanner, so strings and comments are CUE's.
func firstExpr(text string) string {
	var sc scanner.Scanner
	file := token.NewFile("", -1, len(text))
	sc.Init(file, []byte(text), nil, scanner.ScanComments)
	depth := 0
	for {
		pos, tok, lit := sc.Scan()
		switch tok {
		case token.EOF, token.ILLEGAL:
			return text
		case token.COMMENT:
			return text[:file.Offset(pos)]
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			if depth == 0 {
				return text[:file.Offset(pos)]
			}
			depth--
		case token.COMMA:
			// lit is "," for a written comma; the scanner also inserts
			// commas at line ends.
			if depth == 0 && lit == "," {
				return text[:file.Offset(pos)]
			}
		}
	}
}

// rulePos picks the position of the broken rule among an error's positions
// in the policy file: the latest line, the first column on it.
func (p *policy) rulePos(positions []token.Pos) (token.Pos, bool) {
	var in []token.Pos
	for _, pos := range positions {
		if pos.Filename() == p.file {
			in = append(in, pos)
		}
	}
	if len(in) == 0 {
		return token.NoPos, false
	}
	slices.SortFunc(in, func(a, b token.Pos) int {
		if a.Line() != b.Line() {
			return b.Line() - a.Line()
		}
		return a.Column() - b.Column()
	})
	return in[0], true
}
