package analysis

import (
	"errors"
	"fmt"
	"math"
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
