package kubereplicas

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubestore"
)

// LeaseName is the Lease the replicas elect their leader with.
const LeaseName = "legate-controller"

const (
	// DefaultAnswersInterval is how often a follower may write its
	// proxies' answers: changes within it are coalesced.
	DefaultAnswersInterval = 250 * time.Millisecond
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

// LeaderLock is the Lease lock of the replicas in namespace, held under
// the replica's own name (so the Lease says which replica leads).
func LeaderLock(cfg *rest.Config, namespace, replica string) (resourcelock.Interface, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, LeaseName, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: replica})
}

// LeaseHolder is the replica that leads as the Lease of namespace says,
// or "" when nobody holds it or it cannot be read.
func LeaseHolder(ctx context.Context, reader client.Reader, namespace string) string {
	var lease coordinationv1.Lease
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: LeaseName}, &lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// haCache holds the node records and the summaries of namespace: the
// manager's cache keeps only policy ConfigMaps.
func haCache(cfg *rest.Config, namespace string, mgr manager.Manager) (cache.Cache, error) {
	components, err := labels.NewRequirement(kubestore.LabelComponent, selection.In, []string{"node-record", "answers"})
	if err != nil {
		return nil, err
	}
	managed, err := labels.NewRequirement(kubestore.LabelManagedBy, selection.Equals, []string{"legate"})
	if err != nil {
		return nil, err
	}
	return cache.New(cfg, cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), DefaultTransform: cache.TransformStripManagedFields(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject:          map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {Label: labels.NewSelector().Add(*components, *managed)}},
	})
}

// everyReplicaCache runs a cache on every replica: a cache added to the
// manager would otherwise start on the leader alone.
type everyReplicaCache struct{ cache.Cache }

func (everyReplicaCache) NeedLeaderElection() bool { return false }

// Engine is what a replica needs of the revision engine
// (*revisions.Engine): whether it leads, the leader's publications to
// serve while it follows, and the proxies' answers to exchange. Its
// methods are called from the reconciler's goroutines and Run's.
type Engine interface {
	Leading() bool
	Mirrored(node string, revision uint64) bool
	Mirror(revisions.NodeData) error
	LocalAnswers() map[string]revisions.RemoteAnswers
	ObserveRemote(ctx context.Context, node, replica string, a revisions.RemoteAnswers)
}

// Records reads a node record's published revisions (kubestore.Store).
type Records interface {
	LoadNode(ctx context.Context, record *corev1.ConfigMap) (revisions.NodeData, error)
}

// Options are one replica's.
type Options struct {
	// Config reaches the API server; Namespace holds the Lease, the node
	// records and the summaries (the controller's namespace).
	Config    *rest.Config
	Namespace string
	// Replica is this replica's name, unique among the replicas.
	Replica string
	Engine  Engine
	Records Records
	// Client writes this replica's summary; it reads from the API server.
	Client client.Client
	// Counted is called on the leader for a node whose proxy counts
	// changed though its verdict may not have: the status of the object
	// that configures it is to be written again.
	Counted func(node string)
	Log     logr.Logger
	// SkipNameValidation is controller-runtime's, for several
	// controllers in one process (tests).
	SkipNameValidation bool
}

// Replicas is the HA side of one Kubernetes home: it mirrors the leader's
// node records into the engine while this replica follows, writes this
// replica's proxies' answers for the leader, and hands the other
// replicas' answers to the engine. It holds no pointer to the home: what
// it needs comes in through Options.
type Replicas struct {
	opts  Options
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

// New registers, with mgr, a cache of the node records and summaries and
// the reconciler that reads them, both running on every replica: a
// follower serves what the leader wrote, and the leader (or a follower
// ready to lead) counts the other replicas' proxies. Run writes this
// replica's summary.
func New(mgr manager.Manager, opts Options) (*Replicas, error) {
	if opts.Counted == nil {
		opts.Counted = func(string) {}
	}
	ca, err := haCache(opts.Config, opts.Namespace, mgr)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(everyReplicaCache{ca}); err != nil {
		return nil, err
	}
	r := &Replicas{opts: opts, cache: ca, self: opts.Replica, clock: clock.RealClock{}, heard: map[string]heardFrom{}}
	byName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	})
	everyReplica, skip := false, opts.SkipNameValidation
	err = ctrl.NewControllerManagedBy(mgr).Named("replica-state").
		WatchesRawSource(source.Kind(r.cache, client.Object(&corev1.ConfigMap{}), byName)).
		WithOptions(crcontroller.Options{SkipNameValidation: &skip, NeedLeaderElection: &everyReplica}).
		Complete(reconcile.Func(r.reconcile))
	if err != nil {
		return nil, fmt.Errorf("replica state reconciler: %w", err)
	}
	return r, nil
}

func (r *Replicas) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
		if r.opts.Engine.Leading() {
			return ctrl.Result{}, nil // the leader wrote it
		}
		// The first list of the cache, and records this replica has read
		// already, are not read again.
		if rec, err := kubestore.RecordOf(&cm); err == nil && r.opts.Engine.Mirrored(rec.Node, rec.Revision) {
			return ctrl.Result{}, nil
		}
		d, err := r.opts.Records.LoadNode(ctx, &cm)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.opts.Engine.Mirror(d); err != nil {
			r.opts.Log.Error(err, "cannot serve the leader's publication yet; retrying", "node", d.Record.Node)
		}
	case "answers":
		r.heardSummary(ctx, &cm, r.clock.Now())
	}
	return ctrl.Result{}, nil
}

// heardSummary hands another replica's summary, read at now, to the
// engine in place of its last one.
func (r *Replicas) heardSummary(ctx context.Context, cm *corev1.ConfigMap, now time.Time) {
	r.telling.Lock()
	defer r.telling.Unlock()
	replica, tell, err := r.hear(cm.Data, now)
	if err != nil {
		r.opts.Log.Error(err, "ignoring a replica's summary that does not decode", "replica", replica)
	}
	r.tell(ctx, replica, tell)
}

// tell gives the engine what changed in replica's summary.
func (r *Replicas) tell(ctx context.Context, replica string, changes map[string]revisions.RemoteAnswers) {
	for _, node := range slices.Sorted(maps.Keys(changes)) {
		r.opts.Engine.ObserveRemote(ctx, node, replica, changes[node])
		r.counted(node)
	}
}

// hear takes another replica's summary (a ConfigMap's data), read at now,
// in place of its last one, and returns what the engine is to be told
// (answerChanges). A summary that does not decode (err says why) or is
// stale counts no node. This replica's own summary, and one that names no
// replica, change nothing.
func (r *Replicas) hear(data map[string]string, now time.Time) (replica string, changes map[string]revisions.RemoteAnswers, err error) {
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
func (r *Replicas) counted(node string) {
	if !r.opts.Engine.Leading() {
		return
	}
	r.opts.Counted(node)
}

// sweep withdraws the summaries of replicas that stopped writing.
func (r *Replicas) sweep(ctx context.Context, now time.Time) {
	r.telling.Lock()
	defer r.telling.Unlock()
	for replica, changes := range r.expire(now) {
		r.tell(ctx, replica, changes)
	}
}

// expire forgets, at now, the nodes of every stale summary, and returns
// by replica what the engine is to be told (their withdrawal).
func (r *Replicas) expire(now time.Time) map[string]map[string]revisions.RemoteAnswers {
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

// Run writes this replica's summary while it follows (at most once an
// interval), and sweeps stale ones, until ctx ends.
func (r *Replicas) Run(ctx context.Context, interval time.Duration) {
	t := r.clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C():
			r.sweep(ctx, now)
			if !r.opts.Engine.Leading() {
				r.write(ctx, now)
			}
		}
	}
}

// write stores the summary of this replica's proxies when it is due: one
// write per interval at most, whatever the number of proxy events.
func (r *Replicas) write(ctx context.Context, now time.Time) {
	cur := r.opts.Engine.LocalAnswers()
	if !r.due(cur, now) {
		return
	}
	data, err := encodeAnswers(cur)
	if err == nil {
		err = r.put(ctx, map[string]string{replicaKey: r.self, atKey: now.UTC().Format(time.RFC3339Nano), answersKey: data})
	}
	if r.wrote(cur, now, err) {
		r.opts.Log.Error(err, "cannot write this replica's proxy answers for the leader; retrying")
	}
}

// due reports whether the summary cur is to be written at now: it
// changed since the last write, or that write is a heartbeat old.
func (r *Replicas) due(cur map[string]revisions.RemoteAnswers, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !maps.EqualFunc(cur, r.written, revisions.SameAnswers) || now.Sub(r.writtenAt) >= answersHeartbeat
}

// wrote records the outcome err of writing cur at now, and reports
// whether err is news to log: a failure is logged once until it changes
// or a write succeeds.
func (r *Replicas) wrote(cur map[string]revisions.RemoteAnswers, now time.Time, err error) bool {
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
func (r *Replicas) put(ctx context.Context, data map[string]string) error {
	key := client.ObjectKey{Namespace: r.opts.Namespace, Name: answersName(r.self)}
	var cm corev1.ConfigMap
	err := r.opts.Client.Get(ctx, key, &cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: answersLabel}, Data: data}
		return r.opts.Client.Create(ctx, &cm)
	case err != nil:
		return err
	}
	cm.Data = data
	return r.opts.Client.Update(ctx, &cm)
}

// Timing times the election; a zero field keeps controller-runtime's
// default (15 s, 10 s, 2 s, as Kubernetes' own controllers).
type Timing struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Elect makes the manager of mopts one of several replicas of namespace:
// replica campaigns for the Lease LeaseName, timed by t, and gives it up
// when it stops.
func Elect(mopts *manager.Options, cfg *rest.Config, namespace, replica string, t Timing) error {
	lock, err := LeaderLock(cfg, namespace, replica)
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	mopts.LeaderElectionResourceLockInterface = lock
	mopts.LeaderElection, mopts.LeaderElectionID, mopts.LeaderElectionNamespace = true, LeaseName, namespace
	mopts.LeaderElectionReleaseOnCancel = true
	for _, d := range []struct {
		to   **time.Duration
		from time.Duration
	}{{&mopts.LeaseDuration, t.LeaseDuration}, {&mopts.RenewDeadline, t.RenewDeadline}, {&mopts.RetryPeriod, t.RetryPeriod}} {
		if d.from > 0 {
			*d.to = &d.from
		}
	}
	return nil
}
