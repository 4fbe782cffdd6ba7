// Package revisions is the revision engine: it keeps a bounded history of
// rendered configurations per node ID, decides which revision to publish,
// taints revisions that proxies reject and rolls back to the last good one.
// It talks to its storage through the Store interface and never sees gRPC.
//
// The decisions are pure functions (decide.go: the publish rule, the taint
// rule, history and pruning, version assignment) and the per-proxy
// bookkeeping is plain data (tracker.go); the Engine (engine.go,
// observe.go) feeds them, writes the Store and calls the Publisher.
//
// Wiring, in order:
//
//	e, _ := revisions.New(revisions.Options{Store: st, Publisher: p, Registerer: reg})
//	e.Subscribe(reporter)        // optional: pending/success/failure per node and commit
//	_ = e.Restore(ctx)           // before the first fetch: serves the last good revisions
//	go e.Run(ctx)                // applies proxy events and answer timeouts
//	_ = e.Apply(ctx, node, cfg, origin)      // per rendered node config
//	e.RecordValidationFailure(origin, diags) // when rendering fails
//
// The xDS server reports to ObserveProxy, which only queues, so it may be
// called from any goroutine while the server holds its own locks.
//
// A Publisher that refuses a publication taints the revision, except with
// an error made by NotReady (something outside the configuration, such as
// an external secret, does not exist yet): the revision then waits, the
// node serves what it served and shows the wait, and Run tries again every
// TickInterval.
package revisions
