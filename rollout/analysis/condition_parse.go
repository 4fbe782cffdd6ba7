package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

type tokKind int

const (
	tEOF tokKind = iota
	tNum
	tIdent
	tOp
	tPunct
)

type token struct {
	kind tokKind
	text string
	pos  int
}

type parser struct {
	src   string
	pos   int
	tok   token
	depth int
	// inPred counts the all()/any() predicates being parsed: # means
	// something only there.
	inPred int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", p.tok.pos, fmt.Sprintf(format, args...))
}

func (p *parser) next() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
	start := p.pos
	if p.pos >= len(p.src) {
		p.tok = token{kind: tEOF, pos: start}
		return
	}
	c := p.src[p.pos]
	switch {
	case c >= '0' && c <= '9' || c == '.':
		for p.pos < len(p.src) {
			d := p.src[p.pos]
			afterExp := p.pos > start && (p.src[p.pos-1] == 'e' || p.src[p.pos-1] == 'E')
			if !strings.ContainsRune("0123456789.eE", rune(d)) && !(afterExp && (d == '+' || d == '-')) {
				break
			}
			p.pos++
		}
		p.tok = token{kind: tNum, text: p.src[start:p.pos], pos: start}
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		for p.pos < len(p.src) && (p.src[p.pos] == '_' || p.src[p.pos] >= 'a' && p.src[p.pos] <= 'z' ||
			p.src[p.pos] >= 'A' && p.src[p.pos] <= 'Z' || p.src[p.pos] >= '0' && p.src[p.pos] <= '9') {
			p.pos++
		}
		p.tok = token{kind: tIdent, text: p.src[start:p.pos], pos: start}
	default:
		for _, op := range []string{"&&", "||", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "!"} {
			if strings.HasPrefix(p.src[p.pos:], op) {
				p.pos += len(op)
				p.tok = token{kind: tOp, text: op, pos: start}
				return
			}
		}
		p.pos++
		p.tok = token{kind: tPunct, text: p.src[start:p.pos], pos: start}
	}
}

func (p *parser) expect(text string) error {
	if p.tok.text != text || p.tok.kind == tNum || p.tok.kind == tIdent {
		if p.tok.kind == tEOF {
			return p.errorf("want %q, the condition ends", text)
		}
		return p.errorf("want %q, got %q", text, p.tok.text)
	}
	p.next()
	return nil
}

// expr parses by precedence climbing.
func (p *parser) expr(minPrec int) (node, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tOp {
		op := p.tok.text
		prec, ok := precedence[op]
		if !ok || prec <= minPrec {
			break
		}
		p.next()
		right, err := p.expr(prec)
		if err != nil {
			return nil, err
		}
		if err := checkOperands(op, left, right); err != nil {
			return nil, p.errorf("%s", err)
		}
		left = binary{op: op, l: left, r: right}
		if prec == 3 && p.tok.kind == tOp && precedence[p.tok.text] == 3 {
			return nil, p.errorf("chained comparison: join the comparisons with && or ||")
		}
	}
	return left, nil
}

func checkOperands(op string, l, r node) error {
	lk, rk := l.kind(), r.kind()
	if lk == kList {
		lk = kNum
	}
	if rk == kList {
		rk = kNum
	}
	switch op {
	case "&&", "||":
		if lk != kBool || rk != kBool {
			return fmt.Errorf("%s joins true/false values, not numbers", op)
		}
	case "==", "!=":
		if lk != rk {
			return fmt.Errorf("%s compares a number with true/false", op)
		}
	default:
		if lk != kNum || rk != kNum {
			return fmt.Errorf("%s needs numbers on both sides", op)
		}
	}
	return nil
}

const maxDepth = 32

func (p *parser) unary() (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errorf("nested more than %d deep", maxDepth)
	}
	if p.tok.kind == tOp && (p.tok.text == "!" || p.tok.text == "-") {
		op := p.tok.text
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if want := map[string]valueKind{"!": kBool, "-": kNum}[op]; kindOf(x) != want {
			return nil, p.errorf("%s applies to %s", op, map[valueKind]string{kBool: "true/false", kNum: "a number"}[want])
		}
		return unary{op: op, x: x}, nil
	}
	return p.primary()
}

func kindOf(n node) valueKind {
	if n.kind() == kList {
		return kNum
	}
	return n.kind()
}

func (p *parser) primary() (node, error) {
	t := p.tok
	switch t.kind {
	case tNum:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, p.errorf("%q is not a number", t.text)
		}
		p.next()
		return numLit(f), nil
	case tPunct:
		switch t.text {
		case "(":
			p.next()
			n, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			return n, p.expect(")")
		case "#":
			if p.inPred == 0 {
				return nil, p.errorf("# stands for one value only inside all(result, …) or any(result, …)")
			}
			p.next()
			return elem{}, nil
		}
	case tIdent:
		p.next()
		switch t.text {
		case "true", "false":
			return boolLit(t.text == "true"), nil
		case "result":
			if p.tok.text != "[" {
				return resultRef{}, nil
			}
			p.next()
			if p.tok.kind != tNum {
				return nil, p.errorf("want an index such as result[0]")
			}
			i, err := strconv.Atoi(p.tok.text)
			if err != nil || i < 0 || i > 1<<20 {
				return nil, p.errorf("%q is not an index", p.tok.text)
			}
			p.next()
			return index{i: i}, p.expect("]")
		case "len", "isNaN", "all", "any":
			return p.call(t.text)
		case "NaN":
			return numLit(math.NaN()), nil
		case "Inf":
			return numLit(math.Inf(1)), nil
		}
		return nil, fmt.Errorf("offset %d: unknown name %q: want result, len, all, any, isNaN, true or false", t.pos, t.text)
	}
	if t.kind == tEOF {
		return nil, p.errorf("the condition ends where a value is expected")
	}
	return nil, p.errorf("unexpected %q", t.text)
}

func (p *parser) call(name string) (node, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var n node
	switch name {
	case "len":
		if p.tok.text != "result" {
			return nil, p.errorf("len takes result")
		}
		p.next()
		n = lenOf{}
	case "isNaN":
		x, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if kindOf(x) != kNum {
			return nil, p.errorf("isNaN takes a number")
		}
		n = isNaN{x: x}
	default: // all, any
		if p.tok.text != "result" {
			return nil, p.errorf("%s takes result, then a condition on #", name)
		}
		p.next()
		if err := p.expect(","); err != nil {
			return nil, err
		}
		// Argo's examples write the predicate in braces: {# < 1}.
		braced := p.tok.text == "{"
		if braced {
			p.next()
		}
		p.inPred++
		pred, err := p.expr(0)
		p.inPred--
		if err != nil {
			return nil, err
		}
		if pred.kind() != kBool {
			return nil, p.errorf("the condition of %s is not true or false", name)
		}
		if braced {
			if err := p.expect("}"); err != nil {
				return nil, err
			}
		}
		n = quantifier{all: name == "all", pred: pred}
	}
	return n, p.expect(")")
}
