package revisions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/rollout"
	"github.com/legate-dev/legate/sources"
)

// Defaults of Options.
const (
	DefaultHistory   = 10
	DefaultThreshold = 1.0
	DefaultTimeout   = 30 * time.Second
)

// Options configure an Engine. Store and Publisher are required.
type Options struct {
	Store     Store
	Publisher Publisher
	// Clock defaults to the wall clock; tests pass
	// k8s.io/utils/clock/testing's fake.
	Clock clock.PassiveClock
	// History bounds each node's history (default DefaultHistory).
	History int
	// Threshold is the share of a node's proxies that must reject a
	// publication to taint it, in (0, 1] (default DefaultThreshold).
	Threshold float64
	// Timeout is how long to wait for every proxy to answer before judging
	// a publication on the answers at hand (default DefaultTimeout).
	Timeout time.Duration
	// TickInterval is how often Run checks answer timeouts (default 1s).
	TickInterval time.Duration
	// Rollouts returns the progressive rollout plan of a source (the
	// pipeline's source name, NodeRecord.Owner); nil publishes its nodes'
	// new revisions to every proxy at once, as without this option. It is
	// called under the engine's lock and must only look up.
	Rollouts func(source string) *rollout.Plan
	// TenantOf is the tenant of a node's owner (NodeRecord.Owner), to be
	// compared with the Tenant of its proxies' events; nil, or "" for an
	// owner, makes every proxy of the node one of the owner's own. A
	// proxy of another tenant (a namespace the platform shares the node
	// with) is a guest: guests' answers decide the node's verdict only
	// while none of the owner's proxies answers for it, so a tenant can
	// neither trigger nor hold back the rollback of the platform's
	// configuration by what its own proxies answer. It is called under
	// the engine's lock and must only look up.
	TenantOf func(owner string) string
	// Analyzer runs the analysis of rollout steps whose plan has one; nil
	// makes such an analysis inconclusive, which pauses the rollout.
	Analyzer rollout.Analyzer
	// Registerer receives the engine's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// Engine keeps each node's revision history, publishes through a Publisher,
// judges publications from the proxies' answers and rolls back tainted
// ones. All exported methods are safe for concurrent use. ObserveProxy only
// queues; Run must be running for answers and timeouts to take effect.
//
// Locking: decisions are made under mu, and no store or Publisher call is
// made while mu is held, so that one slow API server call delays neither
// the reads (Node, Nodes, Owners, …) nor the other nodes. What keeps one
// node's decisions and writes in order instead is the node's own op lock
// (nodeState.op), held from its decision to the end of its store commit:
// the next decision about the node waits for it, the other nodes do not.
// So a read shows a decision as soon as it is made, possibly before its
// store write is done (Apply still returns after it).
// op is always taken before mu, never while mu is held (lockNode), and
// Restore, Follow and Lead exclude the decisions with phase.
type Engine struct {
	store     Store
	publisher Publisher
	clock     clock.PassiveClock
	log       logr.Logger
	history   int
	threshold float64
	tenantOf  func(owner string) string
	timeout   time.Duration
	tick      time.Duration
	metrics   *metrics
	rollouts  func(source string) *rollout.Plan
	analyzer  rollout.Analyzer

	// phase is held by Restore, Follow and Lead for as long as they take
	// the store's word, and shared by the decisions (Apply, ClearTaint,
	// Release, Forget), so that no decision is made from a half-loaded
	// store. Lock order: phase, then a node's op, then mu.
	phase sync.RWMutex

	mu       sync.Mutex // guards everything below; never held across I/O
	restored bool
	// following: another replica leads; the engine serves what the store
	// says and decides nothing (follow.go).
	following bool
	nodes     map[string]*nodeState
	outbound  []Outcome // collected under mu, delivered by unlock
	tickets   uint64    // the next delivery ticket; taken under mu

	queue eventQueue

	// notifyMu and notifyCond order deliveries by ticket: serving is the
	// ticket whose outcomes are being delivered.
	notifyMu   sync.Mutex
	notifyCond *sync.Cond
	serving    uint64

	subsMu sync.Mutex
	subs   []func(Outcome)
	// moved are the nodes whose rollout moved (a step, a gate, a command,
	// its end) since mu was last released, delivered by unlock to
	// rolloutSubs (SubscribeRollouts).
	moved       []RolloutMove
	rolloutSubs []func(RolloutMove)
}

// waiting is a revision chosen to be served that the Publisher could not
// serve yet, why, since when, and whether its outcomes are reported.
type waiting struct {
	hash     string
	message  string
	since    time.Time
	announce bool
}

// nodeState is the engine's memory of one node ID. The store holds the same
// record and revisions. Its fields are read and written under Engine.mu;
// they are written only by the holder of op.
type nodeState struct {
	// op serializes the decisions about the node with their publication
	// and store commit: it is held across the I/O that mu is released for,
	// so a commit for the node never overtakes an earlier one.
	op sync.Mutex
	// deferred are proxy events that arrived while op was held by another
	// goroutine; the holder applies them before it lets op go.
	deferred []ProxyEvent
	rec      NodeRecord
	revs     map[string]*Revision
	track    *tracker
	// base is the publish rule's state; state refines it with the verdict.
	base    State
	state   State
	verdict verdict
	// announce: outcomes of the current publication are reported (it was
	// made for new content, not as a rollback or a restart).
	announce bool
	// finalSent: success or failure was already reported for it.
	finalSent bool
	// waiting is the revision the publish rule chose but the Publisher
	// could not serve yet (NotReady); Run tries it again every tick.
	waiting *waiting
	// changed holds revisions whose state is to be written at the next
	// commit, fresh those whose content is new and is written whole;
	// dirty asks for every revision whole because a previous commit
	// failed.
	changed map[string]bool
	fresh   map[string]bool
	dirty   bool
	// remote are the answers gathered by other replicas, by replica.
	remote map[string]RemoteAnswers
	// mirrorPending: a follower could not serve the stored publication
	// yet; its tick tries again.
	mirrorPending bool
	// ownerChanged: the record's owner changed since the publication in
	// place was made, so it is published again under the new owner.
	ownerChanged bool
	// ro is what is live of a rollout under way (rollout.go); nil
	// otherwise. Its stored part is rec.Rollout.
	ro *liveRollout
	// mirroredSplit is the rollout split a follower serves (splitOf).
	mirroredSplit string
	// tenantOf is Options.TenantOf.
	tenantOf func(owner string) string
}

// ownerTenant is the tenant of the node's owner; "" when it has none or
// tenants are not told apart.
func (n *nodeState) ownerTenant() string {
	if n.tenantOf == nil || n.rec.Owner == "" {
		return ""
	}
	return n.tenantOf(n.rec.Owner)
}

// New returns an Engine. Call Restore before anything else.
func New(opts Options) (*Engine, error) {
	if opts.Store == nil || opts.Publisher == nil {
		return nil, errors.New("revisions engine needs a Store and a Publisher")
	}
	e := &Engine{
		store:     opts.Store,
		publisher: opts.Publisher,
		clock:     opts.Clock,
		log:       opts.Log,
		history:   opts.History,
		threshold: opts.Threshold,
		timeout:   opts.Timeout,
		tick:      opts.TickInterval,
		rollouts:  opts.Rollouts,
		analyzer:  opts.Analyzer,
		tenantOf:  opts.TenantOf,
		nodes:     map[string]*nodeState{},
	}
	e.notifyCond = sync.NewCond(&e.notifyMu)
	if e.clock == nil {
		e.clock = clock.RealClock{}
	}
	if e.history == 0 {
		e.history = DefaultHistory
	}
	if e.history < 1 {
		return nil, fmt.Errorf("history must be at least 1, got %d", e.history)
	}
	if e.threshold == 0 {
		e.threshold = DefaultThreshold
	}
	if e.threshold < 0 || e.threshold > 1 {
		return nil, fmt.Errorf("taint threshold must be in (0, 1], got %g", e.threshold)
	}
	if e.timeout == 0 {
		e.timeout = DefaultTimeout
	}
	if e.tick == 0 {
		e.tick = time.Second
	}
	e.queue.init()
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	e.metrics = m
	return e, nil
}

// Restore loads the store and re-publishes, for every node, its newest
// untainted revision under fresh versions, so proxies are served before the
// first fetch. A tainted revision is never re-published: a node whose
// revisions are all tainted is left unpublished in RollbackFailed.
func (e *Engine) Restore(ctx context.Context) error {
	data, err := e.store.Load(ctx)
	if err != nil {
		return fmt.Errorf("load revisions from the store: %w", err)
	}
	e.phase.Lock()
	defer e.phase.Unlock()
	e.mu.Lock()
	restored := e.restored
	e.restored = true
	e.mu.Unlock()
	if restored {
		return errors.New("revisions engine already restored")
	}
	var errs []error
	for _, d := range data {
		if err := e.restoreNode(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// restoreNode takes one node's stored data and publishes it again.
func (e *Engine) restoreNode(ctx context.Context, d NodeData) error {
	n, release := e.lockNode(ctx, d.Record.Node, true)
	defer release()
	now := e.clock.Now()
	n.rec = d.Record
	for _, r := range d.Revisions {
		n.revs[r.Hash] = r
	}
	hist := n.rec.History[:0:0]
	for _, h := range n.rec.History {
		if n.revs[h] != nil {
			hist = append(hist, h)
		} else {
			e.log.Info("history names a revision missing from the store; dropping it", "node", d.Record.Node, "revision", h)
		}
	}
	n.rec.History = hist
	var orphans []string
	for h := range n.revs {
		if !slices.Contains(hist, h) {
			orphans = append(orphans, h)
			delete(n.revs, h)
		}
	}
	// Nothing is served after a restart until we publish again.
	n.rec.Published, n.rec.Version = "", ""
	e.reconcile(n, now, true, false)
	return e.commit(ctx, n, orphans)
}

// Apply records one rendered configuration of node and publishes per the
// publish rule. New content becomes a new revision on top of the history;
// content seen before moves its revision to the top and takes origin as its
// origin. Content that was tainted stays tainted and is not published.
// The engine keeps cfg: the caller must not modify it afterwards. An error
// from the store is returned after the publication has been made; the
// engine rewrites the node in full at its next successful write.
func (e *Engine) Apply(ctx context.Context, node string, cfg *render.NodeConfig, origin sources.Origin) error {
	if node == "" || cfg == nil || cfg.Hash == "" {
		return errors.New("apply needs a node ID and a rendered config with a hash")
	}
	if cfg.NodeID != "" && cfg.NodeID != node {
		return fmt.Errorf("config rendered for node %q applied to node %q", cfg.NodeID, node)
	}
	if err := e.checkSize(node, cfg); err != nil {
		return err
	}
	e.phase.RLock()
	defer e.phase.RUnlock()
	e.mu.Lock()
	restored, following := e.restored, e.following
	e.mu.Unlock()
	if !restored {
		return errors.New("revisions engine not restored: call Restore first")
	}
	if following {
		return ErrNotLeader
	}
	n, release := e.lockNode(ctx, node, true)
	defer release()
	now := e.clock.Now()
	rev := n.revs[cfg.Hash]
	if rev == nil {
		rev = &Revision{Node: node, Hash: cfg.Hash, Origin: origin, Config: cfg, CreatedAt: now}
		n.revs[cfg.Hash] = rev
		n.fresh[cfg.Hash] = true
		e.metrics.revisions.WithLabelValues(render.NodeLabel(node)).Inc()
	} else {
		rev.Origin = origin
	}
	n.changed[rev.Hash] = true
	n.rec.History = moveToTop(n.rec.History, rev.Hash)
	if origin.Source != "" && n.rec.Owner != origin.Source {
		// The pipeline lets only a node's owner apply to it: a new owner
		// is recorded, and served with the publication below.
		n.rec.Owner = origin.Source
		n.ownerChanged = true
	}

	gen := n.rec.Generation
	e.reconcile(n, now, n.ownerChanged, true)
	n.ownerChanged = false
	if n.rec.Generation == gen {
		// Nothing was published (a refusal reports itself): tell the origin
		// where its content stands.
		e.reportStanding(n, rev, now)
	}
	keep, drop := prune(n.rec.History, n.rec.Published, e.history)
	n.rec.History = keep
	for _, h := range drop {
		delete(n.revs, h)
		delete(n.changed, h)
		delete(n.fresh, h)
	}
	return e.commit(ctx, n, drop)
}

// ClearTaint removes the taint of one revision and publishes again per the
// publish rule; if the revision is the one served, it is re-published under
// fresh versions so every proxy receives it again.
func (e *Engine) ClearTaint(ctx context.Context, node, hash string) error {
	e.phase.RLock()
	defer e.phase.RUnlock()
	n, release := e.lockNode(ctx, node, false)
	defer release()
	if e.following {
		return ErrNotLeader
	}
	if n == nil || n.revs[hash] == nil {
		return fmt.Errorf("revision %q of node %q: %w", hash, node, ErrNotFound)
	}
	rev := n.revs[hash]
	if rev.Taint == nil {
		return nil
	}
	rev.Taint = nil
	n.changed[hash] = true
	e.reconcile(n, e.clock.Now(), n.rec.Published == hash, true)
	return e.commit(ctx, n, nil)
}

// reportStanding reports, for an origin whose content was not published
// anew, where that content stands.
func (e *Engine) reportStanding(n *nodeState, rev *Revision, now time.Time) {
	switch {
	case rev.Taint != nil:
		e.emit(Outcome{
			Node: rev.Node, Hash: rev.Hash, Origin: rev.Origin, Status: OutcomeFailure,
			State: n.state, Description: "content rejected before: " + rev.Taint.Message,
			Rejections: rev.Taint.Proxies, Time: now,
		})
	case rev.Hash == n.rec.Published:
		n.announce = true
		switch n.verdict {
		case verdictAccepted, verdictDegraded:
			n.finalSent = true
			e.emit(e.outcome(n, rev, OutcomeSuccess, successText(n), now))
		default:
			e.emit(e.outcome(n, rev, OutcomePending, pendingText(n), now))
		}
	}
}

// commit writes the node's new revisions whole, the state of its changed
// ones, its record and deletions. Called with n.op and mu held; mu is
// released during the write and held again when commit returns.
func (e *Engine) commit(ctx context.Context, n *nodeState, drop []string) error {
	u := Update{Record: n.rec, Delete: drop}
	u.Record.History = append([]string(nil), n.rec.History...)
	u.Record.Revision = n.rec.Revision + 1
	for h, r := range n.revs {
		switch {
		case n.dirty || n.fresh[h]:
			cp := *r
			u.Put = append(u.Put, &cp)
		case n.changed[h]:
			u.States = append(u.States, StateOf(r))
		}
	}
	// The node's op lock keeps every other decision about it out until
	// the write is done; mu is released so that nothing else waits for it.
	e.unlock()
	err := e.store.Commit(ctx, u)
	e.mu.Lock()
	if err != nil {
		n.dirty = true
		return fmt.Errorf("store revisions of node %q: %w", n.rec.Node, err)
	}
	n.rec.Revision = u.Record.Revision
	n.dirty = false
	clear(n.changed)
	clear(n.fresh)
	return nil
}

func (e *Engine) nodeFor(id string) *nodeState {
	n := e.nodes[id]
	if n == nil {
		n = &nodeState{
			rec:      NodeRecord{Node: id},
			revs:     map[string]*Revision{},
			track:    newTracker(),
			changed:  map[string]bool{},
			fresh:    map[string]bool{},
			remote:   map[string]RemoteAnswers{},
			tenantOf: e.tenantOf,
		}
		e.nodes[id] = n
	}
	return n
}

// candidates is the history for choose; the revisions in skip count as
// tainted.
func (n *nodeState) candidates(skip map[string]bool) []candidate {
	out := make([]candidate, len(n.rec.History))
	for i, h := range n.rec.History {
		out[i] = candidate{Hash: h, Tainted: n.revs[h].Taint != nil || skip[h]}
	}
	return out
}

// settle sets the node's state from the publish rule and the verdict; a
// node whose chosen revision waits to be served is Pending, whatever it
// serves meanwhile.
func (e *Engine) settle(n *nodeState) {
	s := combineState(n.base, n.verdict)
	if n.waiting != nil {
		s = StatePending
	}
	e.setState(n, s)
}

func (e *Engine) setState(n *nodeState, s State) {
	if n.state == s {
		return
	}
	n.state = s
	e.metrics.setState(n.rec.Node, s)
}
