package core

import (
	"context"
	"sync"
)

// Part is one long-running piece of a home: a manager, the engine, a
// server.
type Part struct {
	// Run runs the part until ctx ends. It returns nil when ctx ended,
	// else why it stopped.
	Run func(ctx context.Context) error
	// Stop, when set, makes Run return for a part that does not watch ctx
	// (a gRPC server).
	Stop func()
}

// RunParts runs every part until ctx ends or one of them returns, whether
// with an error or not (a part that stops on its own leaves the home
// without it); then it ends the others (their context, their Stop) and
// waits for them. It returns the first error a part returned, nil when
// ctx ended and every part stopped cleanly.
func RunParts(ctx context.Context, parts ...Part) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error // in the order the parts returned
	for _, p := range parts {
		wg.Go(func() {
			err := p.Run(ctx)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			cancel()
		})
	}
	<-ctx.Done()
	for _, p := range parts {
		if p.Stop != nil {
			p.Stop()
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
