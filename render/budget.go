package render

import (
	"fmt"
	"time"
)

// Default budgets of one render, applied when an Options field is zero.
const (
	// DefaultMaxResources bounds the resources one render decodes, all
	// nodes together.
	DefaultMaxResources = 100000
	// DefaultTimeout bounds the wall time of one render's own work
	// (parsing, decoding, checks); generators are bounded by their caller.
	DefaultTimeout = 2 * time.Minute
)

// budgetError stops a render that ran out of its budget; the render's
// recover boundary turns it into a RuleLimit diagnostic.
type budgetError struct {
	file string
	msg  string
}

// checkBudget stops the render when it holds too many resources or ran
// past its deadline. It is cheap enough to call per resource: the clock is
// read once every 256 calls.
func (r *renderer) checkBudget() {
	if len(r.items) > r.opts.MaxResources {
		panic(budgetError{file: r.file, msg: fmt.Sprintf("the configuration holds more than %d resources; legate renders at most that many per source (render.Options.MaxResources)", r.opts.MaxResources)})
	}
	r.ticks++
	if r.ticks%256 == 0 {
		r.checkDeadline()
	}
}

// checkDeadline stops the render when it ran past its deadline.
func (r *renderer) checkDeadline() {
	if r.expired() {
		panic(budgetError{file: r.file, msg: r.timeoutMessage()})
	}
}

func (r *renderer) expired() bool {
	return !r.deadline.IsZero() && time.Now().After(r.deadline)
}

func (r *renderer) timeoutMessage() string {
	return fmt.Sprintf("rendering took longer than %s and was stopped; split the configuration or look for inputs that expand a lot", r.opts.Timeout)
}

// addItem adds a resource to decode, within the render's budget.
func (r *renderer) addItem(it *item) {
	r.items = append(r.items, it)
	r.checkBudget()
}

// budgetDiagnostic is the diagnostic of a render stopped by its budget.
func budgetDiagnostic(b budgetError) Diagnostic {
	file := b.file
	if file == "" {
		file = "(configuration)"
	}
	return Diagnostic{Pos: Position{File: file}, Rule: RuleLimit, Message: b.msg}
}
