package pipeline

import (
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
// limit (zero: the render's Timeout plus renderGrace). A render that does
// not finish in time rejects the content with a limit diagnostic; the
// goroutine is left to finish on its own, and since the loop does not
// render the same content twice, one stuck render costs one goroutine.
func RenderBounded(files fs.FS, opts render.Options, limit time.Duration) *render.Result {
	limit = renderLimit(opts, limit)
	done := make(chan *render.Result, 1)
	go func() {
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
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case res := <-done:
		return res
	case <-t.C:
		return &render.Result{Diagnostics: []render.Diagnostic{{
			Pos: render.Position{File: "(configuration)"}, Rule: render.RuleLimit,
			Message: fmt.Sprintf("rendering did not finish within %s and this commit is rejected; look for CUE that evaluates for long or inputs that expand a lot", limit),
		}}}
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
