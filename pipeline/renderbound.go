package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/legate-dev/legate/render"
)

// renderGrace is how long past the renderer's own budget a render may run
// before the loop stops waiting for it: generators (CUE evaluation) cannot
// be interrupted from inside, so the loop bounds them from outside.
const renderGrace = 30 * time.Second

// RenderBounded renders files in a goroutine of its own and waits at most
// limit (zero: the render's Timeout plus renderGrace). At the limit the
// render's context is cancelled, so the render stops at its next check
// (a generator, which cannot be interrupted, ends first), and the content
// is rejected with a limit diagnostic; since the loop does not render the
// same content twice, one stuck generator costs one goroutine.
func RenderBounded(files fs.FS, opts render.Options, limit time.Duration) *render.Result {
	res, _ := RenderWithin(context.Background(), files, opts, limit)
	return res
}

// RenderWithin is RenderBounded under ctx (which replaces opts.Context:
// its end stops the render as the limit does). It also returns stopped,
// closed once the render's goroutine has returned and its memory is the
// garbage collector's: after a verdict at the limit that comes later, and
// a caller that bounds how many renders run at once holds its slot until
// then.
func RenderWithin(ctx context.Context, files fs.FS, opts render.Options, limit time.Duration) (*render.Result, <-chan struct{}) {
	limit = renderLimit(opts, limit)
	atLimit := fmt.Errorf("its limit of %s passed", limit)
	ctx, cancel := context.WithTimeoutCause(ctx, limit, atLimit)
	opts.Context = ctx
	done := make(chan *render.Result, 1)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer cancel()
		// render.Render recovers its own panics; a generator's panic
		// is caught here so that it cannot take the process down.
		defer func() {
			if v := recover(); v != nil {
				done <- &render.Result{Diagnostics: []render.Diagnostic{{
					Pos: render.Position{File: "(configuration)"}, Rule: render.RuleInternal,
					Message: fmt.Sprintf("internal error while rendering: %v; this is a legate bug, please report it", v),
				}}}
			}
		}()
		done <- render.Render(files, opts)
	}()
	select {
	case res := <-done:
		return res, stopped
	case <-ctx.Done():
		select {
		case res := <-done:
			// It finished (and cancelled its context on the way out).
			return res, stopped
		default:
		}
		msg := fmt.Sprintf("rendering did not finish within %s and this commit is rejected; look for CUE that evaluates for long or inputs that expand a lot", limit)
		if cause := context.Cause(ctx); !errors.Is(cause, atLimit) {
			msg = fmt.Sprintf("rendering was stopped before it finished (%v)", cause)
		}
		return &render.Result{Diagnostics: []render.Diagnostic{{
			Pos: render.Position{File: "(configuration)"}, Rule: render.RuleLimit, Message: msg,
		}}}, stopped
	}
}

// renderLimit is limit, or when it is zero the render's own timeout plus
// renderGrace.
func renderLimit(opts render.Options, limit time.Duration) time.Duration {
	if limit > 0 {
		return limit
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = render.DefaultTimeout
	}
	return timeout + renderGrace
}
