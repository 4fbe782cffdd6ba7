// Package pipeline is what every home runs between a fetch and the revision
// engine: it renders a source's files, claims the node IDs they configure
// (one node ID comes from one source), applies each node's configuration to
// the engine, releases the nodes a source stopped rendering, records a new
// commit that changes nothing under the source's path as the origin of the
// content it already carries, and keeps a typed status per source.
//
//	p := pipeline.New(pipeline.Options{Engine: engine, Render: renderOptions, Rerender: trigger})
//	res, err := src.Fetch(ctx)
//	st := p.Sync(ctx, src.Name(), res) // the source's status after this pass
//
// A home schedules (poll ticks, webhooks, informer events), fetches and
// displays; it never renders or applies by itself. Sync of one source must
// not run concurrently with itself (one loop per source, as
// sources.Source.Fetch already requires); different sources sync
// concurrently. The pipeline's lock guards only its own maps: it is never
// held while the engine is called.
//
// The package must not import a home (standalone, the Kubernetes
// controller), the xDS server or a store: the engine is reached through the
// Engine interface.
package pipeline
