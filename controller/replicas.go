package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/textbound"
)

// Several replicas of legate controller share one API server: every one
// serves xDS, the one holding the Lease LeaseName decides. The leader's
// writes reach the followers through their cache of the node records
// (each follower serves the record's publication under its versions); the
// followers' proxies' answers reach the leader through one ConfigMap per
// replica, legate-answers-<replica>, which each follower rewrites when
// its summary changes (at most every AnswersInterval, and every
// answersHeartbeat to say it is alive) and the leader reads through its
// cache.

// LeaseName is the Lease the replicas elect their leader with.
const LeaseName = "legate-controller"

const (
	// defaultAnswersInterval is how often a follower may write its
	// proxies' answers: changes within it are coalesced.
	defaultAnswersInterval = 250 * time.Millisecond
	// answersHeartbeat rewrites an unchanged summary, so the leader can
	// tell a live follower from a dead one.
	answersHeartbeat = 10 * time.Second
	// answersStale is when the leader stops counting a summary not
	// rewritten: its replica is gone, and its proxies reconnect elsewhere.
	answersStale = 3 * answersHeartbeat
	// maxAnswerErrorBytes bounds one proxy's error text in a summary.
	maxAnswerErrorBytes = 512
	// maxAnswersBytes keeps a summary well under the 1 MiB of an object;
	// past it, rejection texts are left out (the counts stay).
	maxAnswersBytes = 800 << 10
)

// answersLabel selects the replicas' summaries.
var answersLabel = map[string]string{kubestore.LabelComponent: "answers", kubestore.LabelManagedBy: "legate"}

// answersKey, replicaKey and atKey are the ConfigMap's data keys.
const (
	answersKey = "nodes"
	replicaKey = "replica"
	atKey      = "at"
)

// answersName is the summary ConfigMap of a replica.
func answersName(replica string) string {
	sum := sha256.Sum256([]byte(replica))
	return "legate-answers-" + hex.EncodeToString(sum[:8])
}

// leaderLock is the Lease lock of the replicas, held under the replica's
// own name (so the Lease says which replica leads).
func leaderLock(opts Options) (resourcelock.Interface, error) {
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, opts.Namespace, LeaseName, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: opts.Replica})
}

// haCache holds the node records and the summaries of the controller's
// namespace: the manager's cache keeps only policy ConfigMaps.
func haCache(opts Options, mgrCache cache.Options) (cache.Cache, error) {
	components, err := labels.NewRequirement(kubestore.LabelComponent, selection.In, []string{"node-record", "answers"})
	if err != nil {
		return nil, err
	}
	managed, err := labels.NewRequirement(kubestore.LabelManagedBy, selection.Equals, []string{"legate"})
	if err != nil {
		return nil, err
	}
	return cache.New(opts.Config, cache.Options{
		Scheme: mgrCache.Scheme, Mapper: mgrCache.Mapper, DefaultTransform: cache.TransformStripManagedFields(),
		DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}},
		ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: labels.NewSelector().Add(*components, *managed)}},
	})
}

// everyReplicaCache runs a cache on every replica: a cache added to the
// manager would otherwise start on the leader alone.
type everyReplicaCache struct{ cache.Cache }

func (everyReplicaCache) NeedLeaderElection() bool { return false }

// replicas is the HA side of one controller.
type replicas struct {
	c     *Controller
	cache cache.Cache
	// self is this replica's name (Options.Replica).
	self  string
	clock clock.WithTicker

	// telling keeps the engine told in the order summaries were heard.
	telling sync.Mutex
	mu      sync.Mutex
	// written is the summary last written, when.
	written     map[string]revisions.RemoteAnswers
	writtenAt   time.Time
	writeFailed string
	// heard is, per other replica, the nodes of its last summary and when
	// it was written.
	heard map[string]heardFrom
}

type heardFrom struct {
	nodes map[string]revisions.RemoteAnswers
	at    time.Time
}

func newReplicas(c *Controller, ca cache.Cache) *replicas {
	return &replicas{c: c, cache: ca, self: c.opts.Replica, clock: clock.RealClock{}, heard: map[string]heardFrom{}}
}

// watch registers, on every replica, the reconcilers of the node records
// (a follower serves what the leader wrote) and of the summaries (the
// leader, and a follower ready to lead, counts the other replicas'
// proxies).
func (r *replicas) watch(skipNameValidation bool) error {
	byName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	})
	err := ctrl.NewControllerManagedBy(r.c.mgr).Named("replica-state").
		WatchesRawSource(source.Kind(r.cache, client.Object(&corev1.ConfigMap{}), byName)).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation, NeedLeaderElection: &everyReplica}).
		Complete(reconcile.Func(r.reconcile))
	if err != nil {
		return fmt.Errorf("replica state reconciler: %w", err)
	}
	return nil
}

func (r *replicas) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm corev1.ConfigMap
	err := r.cache.Get(ctx, req.NamespacedName, &cm)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	switch cm.Labels[kubestore.LabelComponent] {
	case "node-record":
		if r.c.engine.Leading() {
			return ctrl.Result{}, nil // the leader wrote it
		}
		// The first list of the cache, and records this replica has read
		// already, are not read again.
		if rec, err := kubestore.RecordOf(&cm); err == nil && r.c.engine.Mirrored(rec.Node, rec.Revision) {
			return ctrl.Result{}, nil
		}
		d, err := r.c.store.LoadNode(ctx, &cm)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.c.engine.Mirror(d); err != nil {
			r.c.log.Error(err, "cannot serve the leader's publication yet; retrying", "node", d.Record.Node)
		}
	case "answers":
		r.heardSummary(ctx, &cm, r.clock.Now())
	}
	return ctrl.Result{}, nil
}

// heardSummary hands another replica's summary, read at now, to the
// engine in place of its last one.
func (r *replicas) heardSummary(ctx context.Context, cm *corev1.ConfigMap, now time.Time) {
	r.telling.Lock()
	defer r.telling.Unlock()
	replica, tell, err := r.hear(cm.Data, now)
	if err != nil {
		r.c.log.Error(err, "ignoring a replica's summary that does not decode", "replica", replica)
	}
	r.tell(ctx, replica, tell)
}

// tell gives the engine what changed in replica's summary.
func (r *replicas) tell(ctx context.Context, replica string, changes map[string]revisions.RemoteAnswers) {
	for _, node := range slices.Sorted(maps.Keys(changes)) {
		r.c.engine.ObserveRemote(ctx, node, replica, changes[node])
		r.counted(node)
	}
}

// hear takes another replica's summary (a ConfigMap's data), read at now,
// in place of its last one, and returns what the engine is to be told
// (answerChanges). A summary that does not decode (err says why) or is
// stale counts no node. This replica's own summary, and one that names no
// replica, change nothing.
func (r *replicas) hear(data map[string]string, now time.Time) (replica string, changes map[string]revisions.RemoteAnswers, err error) {
	replica = data[replicaKey]
	if replica == "" || replica == r.self {
		return replica, nil, nil
	}
	cur, err := decodeSummary(data, now)
	r.mu.Lock()
	prev := r.heard[replica]
	r.heard[replica] = cur
	r.mu.Unlock()
	return replica, answerChanges(prev.nodes, cur.nodes), err
}

// decodeSummary reads the nodes of a summary as the leader counts them at
// now: none when it does not decode or is stale.
func decodeSummary(data map[string]string, now time.Time) (heardFrom, error) {
	at, _ := time.Parse(time.RFC3339Nano, data[atKey])
	h := heardFrom{nodes: map[string]revisions.RemoteAnswers{}, at: at}
	var nodes map[string]wireAnswers
	if err := json.Unmarshal([]byte(data[answersKey]), &nodes); err != nil {
		return h, err
	}
	if stale(at, now) {
		return h, nil
	}
	for node, a := range nodes {
		h.nodes[node] = a.answers()
	}
	return h, nil
}

// stale reports whether a summary written at is too old to count at now:
// its replica is gone, and its proxies reconnect elsewhere.
func stale(at, now time.Time) bool { return now.Sub(at) > answersStale }

// answerChanges is what the engine is to be told when a replica's summary
// goes from prev to cur: the answers of every node whose summary changed,
// and an empty summary (a withdrawal) for every node cur no longer lists.
func answerChanges(prev, cur map[string]revisions.RemoteAnswers) map[string]revisions.RemoteAnswers {
	changes := map[string]revisions.RemoteAnswers{}
	for node, a := range cur {
		if old, ok := prev[node]; ok && revisions.SameAnswers(old, a) {
			continue
		}
		changes[node] = a
	}
	for node := range prev {
		if _, still := cur[node]; !still {
			changes[node] = revisions.RemoteAnswers{}
		}
	}
	return changes
}

// counted has the leader write the status of the object that owns node
// again: its proxy counts changed though its verdict may not have.
func (r *replicas) counted(node string) {
	if !r.c.engine.Leading() {
		return
	}
	if owner := r.c.pipeline.Owner(node); owner != "" {
		r.c.trigger(owner)
	}
}

// sweep withdraws the summaries of replicas that stopped writing.
func (r *replicas) sweep(ctx context.Context, now time.Time) {
	r.telling.Lock()
	defer r.telling.Unlock()
	for replica, changes := range r.expire(now) {
		r.tell(ctx, replica, changes)
	}
}

// expire forgets, at now, the nodes of every stale summary, and returns
// by replica what the engine is to be told (their withdrawal).
func (r *replicas) expire(now time.Time) map[string]map[string]revisions.RemoteAnswers {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]map[string]revisions.RemoteAnswers{}
	for replica, h := range r.heard {
		if len(h.nodes) > 0 && stale(h.at, now) {
			out[replica] = answerChanges(h.nodes, nil)
			r.heard[replica] = heardFrom{at: h.at}
		}
	}
	return out
}

// run writes this replica's summary while it follows, and sweeps stale
// ones, until ctx ends.
func (r *replicas) run(ctx context.Context, interval time.Duration) {
	t := r.clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C():
			r.sweep(ctx, now)
			if !r.c.engine.Leading() {
				r.write(ctx, now)
			}
		}
	}
}

// write stores the summary of this replica's proxies when it is due: one
// write per interval at most, whatever the number of proxy events.
func (r *replicas) write(ctx context.Context, now time.Time) {
	cur := r.c.engine.LocalAnswers()
	if !r.due(cur, now) {
		return
	}
	data, err := encodeAnswers(cur)
	if err == nil {
		err = r.put(ctx, map[string]string{replicaKey: r.self, atKey: now.UTC().Format(time.RFC3339Nano), answersKey: data})
	}
	if r.wrote(cur, now, err) {
		r.c.log.Error(err, "cannot write this replica's proxy answers for the leader; retrying")
	}
}

// due reports whether the summary cur is to be written at now: it
// changed since the last write, or that write is a heartbeat old.
func (r *replicas) due(cur map[string]revisions.RemoteAnswers, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !maps.EqualFunc(cur, r.written, revisions.SameAnswers) || now.Sub(r.writtenAt) >= answersHeartbeat
}

// wrote records the outcome err of writing cur at now, and reports
// whether err is news to log: a failure is logged once until it changes
// or a write succeeds.
func (r *replicas) wrote(cur map[string]revisions.RemoteAnswers, now time.Time, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.written, r.writtenAt, r.writeFailed = cur, now, ""
		return false
	}
	if err.Error() == r.writeFailed {
		return false
	}
	r.writeFailed = err.Error()
	return true
}

// put creates or replaces the replica's summary ConfigMap.
func (r *replicas) put(ctx context.Context, data map[string]string) error {
	key := client.ObjectKey{Namespace: r.c.opts.Namespace, Name: answersName(r.c.opts.Replica)}
	var cm corev1.ConfigMap
	err := r.c.client.Get(ctx, key, &cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: answersLabel}, Data: data}
		return r.c.client.Create(ctx, &cm)
	case err != nil:
		return err
	}
	cm.Data = data
	return r.c.client.Update(ctx, &cm)
}

// wireAnswers is one node's summary as stored.
type wireAnswers struct {
	Version    string         `json:"version"`
	Population int            `json:"population"`
	Accepted   int            `json:"accepted,omitempty"`
	Rejected   int            `json:"rejected,omitempty"`
	Rejections []wireRejected `json:"rejections,omitempty"`
}

type wireRejected struct {
	Proxy string `json:"proxy"`
	Error string `json:"error"`
}

func (w wireAnswers) answers() revisions.RemoteAnswers {
	a := revisions.RemoteAnswers{Version: w.Version, Population: w.Population, Accepted: w.Accepted, Rejected: w.Rejected}
	for _, r := range w.Rejections {
		a.Rejections = append(a.Rejections, revisions.ProxyRejection{Proxy: r.Proxy, Error: r.Error})
	}
	return a
}

// encodeAnswers is the stored form of a summary, bounded: error texts cut
// to maxAnswerErrorBytes, and left out when the whole would pass
// maxAnswersBytes.
func encodeAnswers(all map[string]revisions.RemoteAnswers) (string, error) {
	wire := make(map[string]wireAnswers, len(all))
	for _, node := range slices.Sorted(maps.Keys(all)) {
		a := all[node]
		w := wireAnswers{Version: a.Version, Population: a.Population, Accepted: a.Accepted, Rejected: a.Rejected}
		for _, rej := range a.Rejections {
			w.Rejections = append(w.Rejections, wireRejected{Proxy: textbound.Prefix(rej.Proxy, 253), Error: textbound.Prefix(rej.Error, maxAnswerErrorBytes)})
		}
		wire[node] = w
	}
	data, err := json.Marshal(wire)
	if err != nil {
		return "", err
	}
	if len(data) > maxAnswersBytes {
		for node, w := range wire {
			w.Rejections = nil
			wire[node] = w
		}
		if data, err = json.Marshal(wire); err != nil {
			return "", err
		}
	}
	if len(data) > maxAnswersBytes {
		return "", errors.New("the proxy answers of this replica's nodes do not fit in one ConfigMap")
	}
	return string(data), nil
}

// ReplicaView is GET /api/v1/replica: who this replica is and what it
// does.
type ReplicaView struct {
	Replica string `json:"replica"`
	// Role is "leader", "follower", or "single" without leader election.
	Role string `json:"role"`
	// LeaseHolder is the replica that leads, as the Lease says.
	LeaseHolder string `json:"leaseHolder,omitempty"`
	// Proxies counts the xDS streams this replica serves.
	Proxies int `json:"proxies"`
}

// replicaView reads the Lease for the holder.
func (c *Controller) replicaView(ctx context.Context) ReplicaView {
	v := ReplicaView{Replica: c.opts.Replica, Role: "single", Proxies: c.xds.Streams()}
	if !c.opts.LeaderElect {
		return v
	}
	v.Role = "follower"
	if c.engine.Leading() {
		v.Role = "leader"
	}
	var lease coordinationv1.Lease
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: c.opts.Namespace, Name: LeaseName}, &lease); err == nil && lease.Spec.HolderIdentity != nil {
		v.LeaseHolder = *lease.Spec.HolderIdentity
	}
	return v
}

// Leading reports whether this replica decides: it leads, or runs
// without leader election.
func (c *Controller) Leading() bool { return c.engine.Leading() }
