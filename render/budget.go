package render

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// Default budgets of one render, applied when an Options field is zero.
const (
	// DefaultMaxResources bounds the resources one render decodes, all
	// nodes together.
	DefaultMaxResources = 100000
	// DefaultTimeout bounds the wall time of one render's own work
	// (parsing, decoding, checks); generators are bounded by their caller.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxExpansion bounds what YAML aliases and merge keys may add
	// to one render, in bytes of what the render holds for it (see
	// nodeCost): about 128 000 values repeated through aliases.
	DefaultMaxExpansion = 32 << 20
)

// nodeCost is what a render holds for each value it decodes, beyond the
// value's JSON text: the writer's position index (16 bytes) while it is
// written, the decoded message's share once it is (a structpb.Value and
// its kind, a list slot: 110 bytes a value held at the Checks, measured
// by TestNodeCostCoversWhatARenderHolds), and the garbage of decoding,
// validation and canonical serialization on the way (the heap peaks at
// 200 to 270 bytes a value). A render's budget charges every expanded
// value at this price, so that a document of many tiny aliased values,
// whose text is short, is charged for what it really costs.
const nodeCost = 256

// chargeStep is how much a writer spends before it charges the render's
// budget and reads its stop flag: small against the budget, large
// enough that the atomics are not felt.
const chargeStep = 16 << 10

// budget is what one render may hold and how long it may run: the cost
// of everything its resources expand to (text and values, see nodeCost),
// within the render's own input plus MaxExpansion, and the stop flag of
// its context. It is shared by the render's writers and safe for
// concurrent use once decoding starts (allow runs before).
type budget struct {
	// limit is MaxExpansion plus what the input costs once
	// (allowInput); used is what writers have charged.
	limit     int64
	expansion int64
	used      atomic.Int64
	// stopped is set when the render's context ends: its caller gave up
	// on it, or its Timeout passed. Every loop that may run long reads it.
	stopped atomic.Bool
	// tripped is the first diagnostic of a writer over the limit.
	tripped atomic.Pointer[Diagnostic]
}

func newBudget(expansion int64) *budget {
	return &budget{limit: expansion, expansion: expansion}
}

// allowInput raises the limit by what a parsed input of size bytes costs when
// written once, aliases not followed: a render may always expand its own
// input, and MaxExpansion more. Called while documents are read, before
// any writer charges.
func (b *budget) allowInput(size int, roots ...*yaml.Node) {
	if b == nil {
		return
	}
	nodes := int64(0)
	for _, r := range roots {
		nodes += countNodes(r)
	}
	// A value's JSON is at most six bytes per byte of its text (a
	// control character becomes \u00XX) plus quotes, separators and a
	// number's canonical digits.
	b.limit += nodes*(nodeCost+24) + 6*int64(size)
}

// countNodes counts the nodes of a parsed tree, not following aliases.
func countNodes(n *yaml.Node) int64 {
	if n == nil {
		return 0
	}
	c := int64(1)
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

// charge adds n to what the render spent and reports whether it is
// still within its limit.
func (b *budget) charge(n int64) bool {
	return b.used.Add(n) <= b.limit
}

// errStopped ends a writer whose render was stopped; the render's
// diagnostic says why (checkDeadline).
var errStopped = errors.New("render stopped")

// budgetError stops a render that ran out of its budget; the render's
// recover boundary turns it into its only diagnostic.
type budgetError struct {
	diag Diagnostic
}

func limitAt(file, msg string) budgetError {
	if file == "" {
		file = "(configuration)"
	}
	return budgetError{diag: Diagnostic{Pos: Position{File: file}, Rule: RuleLimit, Message: msg}}
}

// watch sets the budget's stop flag when the render's context ends, which
// is the render's Timeout after it starts at the latest: the writers and
// walks read the flag, the stages between them the context itself. The
// returned function releases both.
func (r *renderer) watch(parent context.Context) func() {
	if parent == nil {
		parent = context.Background()
	}
	r.parent = parent
	ctx, cancel := context.WithTimeout(parent, r.opts.Timeout)
	r.ctx = ctx
	stop := context.AfterFunc(ctx, func() { r.jw.budget.stopped.Store(true) })
	return func() {
		stop()
		cancel()
	}
}

// checkBudget stops the render when it holds too many resources or was
// stopped. It is cheap enough to call per resource.
func (r *renderer) checkBudget() {
	if len(r.items) > r.opts.MaxResources {
		panic(limitAt(r.file, fmt.Sprintf("the configuration holds more than %d resources; legate renders at most that many per source (render.Options.MaxResources)", r.opts.MaxResources)))
	}
	r.checkDeadline()
}

// checkDeadline stops the render when its context ended, and when a
// writer went over the budget.
func (r *renderer) checkDeadline() {
	if r.ctx != nil && r.ctx.Err() != nil {
		// The flag is set by the context's own goroutine, soon; here,
		// between stages, the render stops at once.
		r.jw.budget.stopped.Store(true)
	}
	if r.expired() {
		panic(limitAt(r.file, r.stopMessage()))
	}
	if d := r.jw.budget.tripped.Load(); d != nil {
		panic(budgetError{diag: *d})
	}
}

func (r *renderer) expired() bool {
	return r.jw.budget.stopped.Load()
}

// stopMessage says why the render was stopped: its caller's reason, or
// its own timeout.
func (r *renderer) stopMessage() string {
	if r.parent != nil && r.parent.Err() != nil {
		return fmt.Sprintf("rendering was stopped before it finished (%v); nothing of it is kept", context.Cause(r.parent))
	}
	return fmt.Sprintf("rendering took longer than %s and was stopped; split the configuration or look for inputs that expand a lot", r.opts.Timeout)
}

// message is what a writer that went over the budget says.
func (b *budget) message() string {
	return fmt.Sprintf("the configuration expands to more than its budget: the render would hold over %d MiB for its values, "+
		"counting %d bytes per value; YAML aliases and merge keys may add %d MiB to what the input itself holds "+
		"(repeated aliases? render.Options.MaxExpansion)", b.limit>>20, nodeCost, b.expansion>>20)
}

// spend charges the budget for what the render builds from node n of file
// outside the writer, and stops the render when it is over.
func (r *renderer) spend(file string, n *yaml.Node, cost int64) {
	b := r.jw.budget
	if !b.charge(cost) {
		panic(budgetError{diag: Diagnostic{Pos: nodePos(file, n), Rule: RuleLimit, Message: b.message()}})
	}
}

// addItem adds a resource to decode, within the render's budget.
func (r *renderer) addItem(it *item) {
	r.items = append(r.items, it)
	r.checkBudget()
}
