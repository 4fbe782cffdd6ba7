package pipeline

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/legate-dev/legate/logging"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
)

// Engine is what the pipeline needs of the revision engine
// (*revisions.Engine).
type Engine interface {
	Apply(ctx context.Context, node string, cfg *render.NodeConfig, origin sources.Origin) error
	RecordValidationFailure(origin sources.Origin, diags []render.Diagnostic)
	Revision(node, hash string) (rev revisions.Revision, served, ok bool)
	// Owners, Ownership, Release and Forget keep node ownership as stored
	// state (revisions.NodeRecord.Owner).
	Owners() map[string]string
	Ownership(node string) revisions.Ownership
	Release(ctx context.Context, node, owner string) error
	Forget(ctx context.Context, node string) error
}

// Options configure a Pipeline. Engine is required.
type Options struct {
	Engine Engine
	// Render returns the renderer configuration for one render of source.
	// It is called once per render because stages such as CUE policies
	// keep per-render state; nil renders with the defaults.
	Render func(source string) render.Options
	// Scope checks (and may rewrite) what a source's rendered
	// configuration refers to outside itself, such as external secrets;
	// its diagnostics reject the render. Nil checks nothing.
	Scope func(source string, result *render.Result) []render.Diagnostic
	// Prepare is called with every accepted render before it is applied,
	// outside any lock, for work the engine should not do under its own,
	// such as reading the key material of the render's external secrets.
	// Nil does nothing.
	Prepare func(source string, result *render.Result)
	// RenderLimit bounds one render from outside (zero: the render's
	// timeout plus a grace of 30 s), see RenderBounded.
	RenderLimit time.Duration
	// Rerender asks the home to sync source again soon, even though its
	// content did not change: it is called when a node that source was
	// refused becomes free. It must not block; nil asks nothing.
	Rerender func(source string)
	// Tenant names the tenant a source belongs to (the Kubernetes home:
	// its namespace); nil puts every source in one tenant. A node is
	// owned by one source at a time, whatever the tenants; between
	// tenants, a contest names nothing of the owner, and a node taken over
	// from another tenant starts a new history (nothing of the other
	// tenant's revisions, commits or proxies' texts is shown).
	Tenant func(source string) string
	// ApplyConcurrency bounds how many of one commit's nodes are handed
	// to the engine at once (zero: DefaultApplyConcurrency; 1: one after
	// the other). One node's applies stay in order whatever it is: the
	// engine serializes them per node, and a source's Syncs do not overlap.
	ApplyConcurrency int
	// Registerer receives the render metrics; nil registers nothing.
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// Pipeline runs fetched content through rendering, node claims and the
// engine, for every source of one home. It is safe for concurrent use.
type Pipeline struct {
	opts    Options
	metrics *metrics

	// seeded: claims holds the owners the engine stored (seed).
	seedOnce sync.Once

	mu      sync.Mutex
	sources map[string]*sourceState
	claims  claims
}

// sourceState is what the pipeline remembers of one source.
type sourceState struct {
	// pass serializes Sync of this source; held while the engine is
	// called, but never taken by anything the engine calls.
	pass sync.Mutex

	// The fields below are guarded by Pipeline.mu.
	status Status
	// content is the Content of the last fetch that was rendered; ""
	// renders the next fetch whatever its content.
	content string
	// last is the last render, and commit the last commit it was applied
	// or recorded for.
	last   *render.Result
	commit string
}

// New returns a Pipeline.
func New(opts Options) (*Pipeline, error) {
	if opts.Engine == nil {
		return nil, errors.New("pipeline needs an Engine")
	}
	if opts.Render == nil {
		opts.Render = func(string) render.Options { return render.Options{} }
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Pipeline{opts: opts, metrics: m, sources: map[string]*sourceState{}, claims: newClaims(opts.Tenant)}, nil
}

// Sync runs one fetch result of source through the pipeline and returns
// the source's status after it. Content equal to the last rendered one is
// not rendered again; its commit is recorded as the origin of what the last
// render applied. Sync of one source must not run concurrently with itself
// (a second call waits for the first).
func (p *Pipeline) Sync(ctx context.Context, source string, res *sources.Result) Status {
	p.seed()
	st := p.state(source)
	st.pass.Lock()
	defer st.pass.Unlock()

	origin := res.Origin
	p.mu.Lock()
	st.status.Revision, st.status.Commit = origin.Revision(), origin.Commit
	unchanged := !res.Changed && st.content != "" && st.content == res.Content
	p.mu.Unlock()
	if unchanged {
		p.recommit(ctx, source, st, origin)
		return p.Status(source)
	}

	log := p.opts.Log.WithValues("source", source, "revision", origin.Revision())
	start := time.Now()
	result := RenderBounded(res.Files, p.opts.Render(source), p.opts.RenderLimit)
	if p.opts.Scope != nil {
		result.Diagnostics = append(result.Diagnostics, p.opts.Scope(source, result)...)
	}
	inObject(origin, res.Files, result)
	p.metrics.renderDuration.WithLabelValues(source).Observe(time.Since(start).Seconds())
	p.mu.Lock()
	st.content, st.last, st.commit = res.Content, result, origin.Commit
	p.mu.Unlock()

	if !result.OK() {
		p.metrics.renderFailures.WithLabelValues(source).Inc()
		logging.Warn(log, "commit rejected by validation; nothing published", "commit", origin.Commit,
			"errors", len(result.Diagnostics), "first", result.Diagnostics[0].String())
		p.opts.Engine.RecordValidationFailure(origin, result.Diagnostics)
		p.mu.Lock()
		st.status.Invalid = true
		st.status.Diagnostics, st.status.DiagnosticCount = firstDiagnostics(result.Diagnostics), len(result.Diagnostics)
		st.status.Warnings, st.status.ApplyErrors, st.status.Tainted = nil, nil, nil
		p.mu.Unlock()
		return p.Status(source)
	}
	if p.opts.Prepare != nil {
		p.opts.Prepare(source, result)
	}
	for _, d := range result.Warnings[:min(len(result.Warnings), MaxDiagnostics)] {
		log.Info("configuration accepted with a warning", "commit", origin.Commit, "warning", d.String())
	}

	nodes := slices.Sorted(func(yield func(string) bool) {
		for id := range result.Nodes {
			if !yield(id) {
				return
			}
		}
	})
	p.mu.Lock()
	p.claims.withdraw(source)
	var mine, taken []string
	for _, node := range nodes {
		owner, ok, fresh := p.claims.claim(node, source)
		if !ok {
			if p.claims.tenant(owner) != p.claims.tenant(source) {
				owner = "another tenant"
			}
			logging.Warn(log, "node is rendered by another source; this source's configuration of it is ignored", "node", node, "owner", owner)
			continue
		}
		mine = append(mine, node)
		if fresh {
			taken = append(taken, node)
		}
	}
	released, freed := p.claims.disown(source, nodes)
	p.markFreed(freed)
	p.mu.Unlock()

	p.takeOver(ctx, log, source, taken)
	p.release(ctx, log, source, released)
	applied, tainted, failed := p.apply(ctx, log, mine, result, origin)
	p.rerender(log, freed)
	logApplied(log, origin.Commit, applied, tainted)

	p.mu.Lock()
	st.status.Nodes = applied
	st.status.LastApplied = time.Now()
	st.status.AppliedRevision = origin.Revision()
	st.status.Invalid, st.status.Diagnostics, st.status.DiagnosticCount = false, nil, 0
	st.status.Warnings = firstDiagnostics(result.Warnings)
	st.status.ApplyErrors, st.status.Tainted = failed, tainted
	p.mu.Unlock()
	return p.Status(source)
}

// recommit applies the last render of source again under origin when
// origin is a commit it was not applied for yet: the revisions then
// record the newest commit that carries their content, and that commit
// gets its status like any other.
func (p *Pipeline) recommit(ctx context.Context, source string, st *sourceState, origin sources.Origin) {
	p.mu.Lock()
	last := st.last
	if last == nil || origin.Commit == "" || origin.Commit == st.commit {
		p.mu.Unlock()
		return
	}
	st.commit = origin.Commit
	var mine []string
	if last.OK() {
		for id := range last.Nodes {
			if p.claims.owner(id) == source {
				mine = append(mine, id)
			}
		}
	}
	p.mu.Unlock()

	log := p.opts.Log.WithValues("source", source, "revision", origin.Revision())
	if !last.OK() {
		p.opts.Engine.RecordValidationFailure(origin, last.Diagnostics)
		return
	}
	slices.Sort(mine)
	applied, tainted, failed := p.apply(ctx, log, mine, last, origin)
	log.Info("commit changes nothing under the path; its content is recorded under it", "commit", origin.Commit)
	logApplied(log, origin.Commit, applied, tainted)
	p.mu.Lock()
	defer p.mu.Unlock()
	st.status.Nodes = applied
	st.status.LastApplied = time.Now()
	st.status.AppliedRevision = origin.Revision()
	st.status.ApplyErrors, st.status.Tainted = failed, tainted
}

// DefaultApplyConcurrency is how many of a commit's nodes the pipeline
// hands to the engine at once when Options.ApplyConcurrency is zero. The
// engine writes different nodes outside its lock, so a commit that changes
// many nodes is bounded by the store's latency divided by this, not by the
// sum of its writes; 16 keeps an API server's client-side rate limiter and
// a bbolt file's single writer busy without queueing hundreds of
// goroutines behind them.
const DefaultApplyConcurrency = 16

// apply hands each of nodes' configuration to the engine, up to
// ApplyConcurrency at a time. The results are kept in nodes' order (and
// the failures logged in it) so that statuses, logs and commit statuses
// read the same whatever order the applies finished in. tainted are the
// applied nodes whose content was rejected before (checked before the
// apply, as a proxy may reject new content while it is applied).
func (p *Pipeline) apply(ctx context.Context, log logr.Logger, nodes []string, result *render.Result, origin sources.Origin) (applied, tainted []string, failed []NodeError) {
	type outcome struct {
		err     error
		tainted bool
	}
	outcomes := make([]outcome, len(nodes))
	one := func(i int) {
		node := nodes[i]
		cfg := result.Nodes[node]
		rev, _, known := p.opts.Engine.Revision(node, cfg.Hash)
		outcomes[i] = outcome{err: p.opts.Engine.Apply(ctx, node, cfg, origin), tainted: known && rev.Taint != nil}
	}
	workers := min(p.applyConcurrency(), len(nodes))
	if workers <= 1 {
		for i := range nodes {
			one(i)
		}
	} else {
		// Workers take the next index rather than a node each, so that
		// no more than workers goroutines exist for a commit of any size.
		next := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					one(i)
				}
			}()
		}
		for i := range nodes {
			next <- i
		}
		close(next)
		wg.Wait()
	}

	applied = make([]string, 0, len(nodes))
	for i, node := range nodes {
		if err := outcomes[i].err; err != nil {
			log.Error(err, "apply failed", "node", node)
			failed = append(failed, NodeError{Node: node, Error: err.Error()})
			continue
		}
		applied = append(applied, node)
		if outcomes[i].tainted {
			tainted = append(tainted, node)
		}
	}
	return applied, tainted, failed
}

func (p *Pipeline) applyConcurrency() int {
	if p.opts.ApplyConcurrency > 0 {
		return p.opts.ApplyConcurrency
	}
	return DefaultApplyConcurrency
}

// Invalidate makes the next Sync of every source render again though its
// content is unchanged (the rules it is judged by changed: a home's
// policies), and returns the sources, sorted, for the home to schedule.
func (p *Pipeline) Invalidate() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.sources))
	for name, st := range p.sources {
		st.content = ""
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Remove forgets source (its object was deleted): the nodes it owned stop
// being served and are released (revisions.Engine.Forget), and the sources
// that were refused one of them render again to take it. It returns the
// nodes it stopped serving.
func (p *Pipeline) Remove(ctx context.Context, source string) []string {
	p.seed()
	st := p.state(source)
	st.pass.Lock()
	defer st.pass.Unlock()
	p.mu.Lock()
	p.claims.withdraw(source)
	released, freed := p.claims.disown(source, nil)
	p.markFreed(freed)
	delete(p.sources, source)
	p.mu.Unlock()

	log := p.opts.Log.WithValues("source", source)
	for _, node := range released {
		if err := p.opts.Engine.Forget(ctx, node); err != nil && !errors.Is(err, revisions.ErrNotFound) {
			log.Error(err, "could not stop serving the node of a removed source", "node", node)
		}
	}
	p.rerender(log, freed)
	return released
}

// seed takes, once, the node owners the engine stored as the claims'
// starting point, so that a restarted or newly leading home honours them.
// The engine must be restored (or leading) before the first Sync.
func (p *Pipeline) seed() {
	p.seedOnce.Do(func() {
		owners := p.opts.Engine.Owners()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.claims.seed(owners)
	})
}

// markFreed makes the sources refused a released node render again,
// though their content did not change. Called with mu held.
func (p *Pipeline) markFreed(freed []string) {
	for _, c := range freed {
		if cs := p.sources[c]; cs != nil {
			cs.content = ""
		}
	}
}

// rerender asks the home to sync the sources refused a released node.
func (p *Pipeline) rerender(log logr.Logger, freed []string) {
	for _, c := range freed {
		log.Info("a node this source no longer renders is released to the source that also renders it", "to", c)
		if p.opts.Rerender != nil {
			p.opts.Rerender(c)
		}
	}
}

// takeOver starts a new history for the nodes source takes whose history
// came from another tenant: a tenant sees nothing of another's revisions.
func (p *Pipeline) takeOver(ctx context.Context, log logr.Logger, source string, nodes []string) {
	for _, node := range nodes {
		last := p.opts.Engine.Ownership(node).Last
		if last == "" || p.claims.tenant(last) == p.claims.tenant(source) {
			continue
		}
		if err := p.opts.Engine.Forget(ctx, node); err != nil && !errors.Is(err, revisions.ErrNotFound) {
			log.Error(err, "could not clear the history another tenant left on a node", "node", node)
		}
	}
}

// release records that source no longer owns nodes.
func (p *Pipeline) release(ctx context.Context, log logr.Logger, source string, nodes []string) {
	for _, node := range nodes {
		if err := p.opts.Engine.Release(ctx, node, source); err != nil {
			log.Error(err, "could not store that a node is released", "node", node)
		}
	}
}

// Status returns the status of source; a source never synced has only its
// name.
func (p *Pipeline) Status(source string) Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{Source: source}
	if s := p.sources[source]; s != nil {
		st = s.status.clone()
	}
	st.Conflicts = p.claims.conflicts(source)
	return st
}

func (p *Pipeline) state(source string) *sourceState {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.sources[source]
	if st == nil {
		st = &sourceState{status: Status{Source: source}}
		p.sources[source] = st
	}
	return st
}

// logApplied tells what an apply of commit did, truthfully: content the
// node's proxies rejected before stays tainted and is not served, which is
// no "configuration applied".
func logApplied(log logr.Logger, commit string, applied, tainted []string) {
	var served []string
	for _, node := range applied {
		if !slices.Contains(tainted, node) {
			served = append(served, node)
		}
	}
	if len(tainted) > 0 {
		logging.Warn(log, "commit carries content the proxies rejected before; it stays tainted and is not served (legate untaint clears it)",
			"commit", commit, "nodes", tainted)
	}
	if len(served) > 0 {
		log.Info("configuration applied", "commit", commit, "nodes", served)
	} else if len(tainted) == 0 {
		logging.Warn(log, "commit applied to no node", "commit", commit)
	}
}

// Owner is the source that renders node now, or "".
func (p *Pipeline) Owner(node string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.claims.owner(node)
}

// Dropped reports whether the last render of source was good and no
// longer configures node (its configuration moved elsewhere or was
// deleted).
func (p *Pipeline) Dropped(source, node string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.sources[source]
	return st != nil && st.last != nil && st.last.OK() && st.last.Nodes[node] == nil
}
