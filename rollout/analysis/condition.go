package analysis

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A Condition is a small expression over a Prometheus result, the subset
// of Argo Rollouts' expr syntax that conditions use in practice:
//
//	result[0] < 0.01
//	len(result) == 0 || result[0] >= 0.99
//	all(result, # < 500) && !isNaN(result[0])
//	result[0] / result[1] <= 2
//
// result is the query's answer as a list of numbers (a scalar is a list of
// one, a vector lists its samples' values in the server's order); a bare
// `result` in arithmetic means its only element. It is written by hand
// rather than pulled from an expression library so that the production
// binary carries no interpreter: parsing is one pass over at most
// MaxConditionLen bytes, and evaluation visits each node once (all/any
// once per element), so no condition can loop or allocate without bound.
type Condition struct {
	src  string
	root node
}

// ParseCondition parses src; the error gives the byte offset.
func ParseCondition(src string) (*Condition, error) {
	if len(src) > MaxConditionLen {
		return nil, fmt.Errorf("%d bytes, at most %d", len(src), MaxConditionLen)
	}
	p := &parser{src: src}
	p.next()
	n, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.errorf("unexpected %q", p.tok.text)
	}
	if n.kind() != kBool {
		return nil, errors.New("the condition is not true or false: compare the result, e.g. result[0] < 0.01")
	}
	return &Condition{src: src, root: n}, nil
}

// String returns the source text.
func (c *Condition) String() string { return c.src }

// Eval evaluates the condition over result. An error (an index past the
// end of the result, a bare result that is not one number) is a
// measurement error, not a failure, as in Argo.
func (c *Condition) Eval(result []float64) (bool, error) {
	v, err := c.root.eval(&env{result: result})
	if err != nil {
		return false, err
	}
	return v.b, nil
}

type valueKind int

const (
	kNum valueKind = iota
	kBool
	kList
)

type value struct {
	n float64
	b bool
}

type env struct {
	result []float64
	// elem is # inside all()/any().
	elem float64
}

type node interface {
	eval(e *env) (value, error)
	kind() valueKind
}

type numLit float64

func (n numLit) eval(*env) (value, error) { return value{n: float64(n)}, nil }
func (numLit) kind() valueKind            { return kNum }

type boolLit bool

func (b boolLit) eval(*env) (value, error) { return value{b: bool(b)}, nil }
func (boolLit) kind() valueKind            { return kBool }

// resultRef is `result` itself: a list, or its only number in arithmetic.
type resultRef struct{}

func (resultRef) eval(e *env) (value, error) {
	if len(e.result) != 1 {
		return value{}, fmt.Errorf("result has %d values; index it, e.g. result[0]", len(e.result))
	}
	return value{n: e.result[0]}, nil
}
func (resultRef) kind() valueKind { return kList }

type index struct{ i int }

func (x index) eval(e *env) (value, error) {
	if x.i >= len(e.result) {
		return value{}, fmt.Errorf("result[%d]: the result has %d values", x.i, len(e.result))
	}
	return value{n: e.result[x.i]}, nil
}
func (index) kind() valueKind { return kNum }

type elem struct{}

func (elem) eval(e *env) (value, error) { return value{n: e.elem}, nil }
func (elem) kind() valueKind            { return kNum }

type lenOf struct{}

func (lenOf) eval(e *env) (value, error) { return value{n: float64(len(e.result))}, nil }
func (lenOf) kind() valueKind            { return kNum }

type isNaN struct{ x node }

func (f isNaN) eval(e *env) (value, error) {
	v, err := f.x.eval(e)
	return value{b: math.IsNaN(v.n)}, err
}
func (isNaN) kind() valueKind { return kBool }

// quantifier is all(result, pred) or any(result, pred). Like expr, all of
// an empty result is true and any of it is false.
type quantifier struct {
	all  bool
	pred node
}

func (q quantifier) eval(e *env) (value, error) {
	inner := *e
	for _, x := range e.result {
		inner.elem = x
		v, err := q.pred.eval(&inner)
		if err != nil {
			return value{}, err
		}
		if v.b != q.all {
			return value{b: !q.all}, nil
		}
	}
	return value{b: q.all}, nil
}
func (quantifier) kind() valueKind { return kBool }

type unary struct {
	op string
	x  node
}

func (u unary) eval(e *env) (value, error) {
	v, err := u.x.eval(e)
	if u.op == "!" {
		return value{b: !v.b}, err
	}
	return value{n: -v.n}, err
}

func (u unary) kind() valueKind {
	if u.op == "!" {
		return kBool
	}
	return kNum
}

type binary struct {
	op   string
	l, r node
}

func (b binary) eval(e *env) (value, error) {
	l, err := b.l.eval(e)
	if err != nil {
		return value{}, err
	}
	// && and || short-circuit so that `len(result) == 0 || result[0] < 1`
	// does not index an empty result.
	switch b.op {
	case "&&":
		if !l.b {
			return value{b: false}, nil
		}
	case "||":
		if l.b {
			return value{b: true}, nil
		}
	}
	r, err := b.r.eval(e)
	if err != nil {
		return value{}, err
	}
	switch b.op {
	case "&&", "||":
		return value{b: r.b}, nil
	case "==":
		if b.l.kind() == kBool {
			return value{b: l.b == r.b}, nil
		}
		return value{b: l.n == r.n}, nil
	case "!=":
		if b.l.kind() == kBool {
			return value{b: l.b != r.b}, nil
		}
		return value{b: l.n != r.n}, nil
	case "<":
		return value{b: l.n < r.n}, nil
	case "<=":
		return value{b: l.n <= r.n}, nil
	case ">":
		return value{b: l.n > r.n}, nil
	case ">=":
		return value{b: l.n >= r.n}, nil
	case "+":
		return value{n: l.n + r.n}, nil
	case "-":
		return value{n: l.n - r.n}, nil
	case "*":
		return value{n: l.n * r.n}, nil
	case "/":
		return value{n: l.n / r.n}, nil
	}
	return value{}, fmt.Errorf("unknown operator %s", b.op)
}

func (b binary) kind() valueKind {
	switch b.op {
	case "+", "-", "*", "/":
		return kNum
	}
	return kBool
}

// Binding powers: || < && < comparisons < + - < * /.
var precedence = map[string]int{
	"||": 1, "&&": 2,
	"==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
	"+": 4, "-": 4, "*": 5, "/": 5,
}

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
