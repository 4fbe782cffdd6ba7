package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline/readiness"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout/kuberollout"
	"github.com/legate-dev/legate/sources"
	kubesrc "github.com/legate-dev/legate/sources/kube"
	"github.com/legate-dev/legate/tenancy"
)

// What the controller needs of the API server (config/rbac, generated).
// The patch removes a handled legate.dev/rollout annotation, nothing else.
// +kubebuilder:rbac:groups=legate.dev,resources=envoyconfigs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=legate.dev,resources=envoyconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=legate.dev,resources=envoyconfigrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=legate.dev,resources=envoyconfigrevisions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// envoyConfigReconciler runs each EnvoyConfig through the pipeline and
// has its status written. It owns the source of each EnvoyConfig it saw.
type envoyConfigReconciler struct {
	*shared

	mu      sync.Mutex
	sources map[types.NamespacedName]*kubesrc.EnvoyConfigSource
}

func newEnvoyConfigReconciler(s *shared) *envoyConfigReconciler {
	return &envoyConfigReconciler{shared: s, sources: map[types.NamespacedName]*kubesrc.EnvoyConfigSource{}}
}

// envoyConfigWorkers is how many EnvoyConfigs are reconciled at once
// (controller-runtime never hands two workers the same object). A
// reconcile mostly waits on the API server: the revision it stores and
// the status it writes. With one worker, a change to many objects at
// once (a kubectl apply of a directory, a rollback across a fleet, whose
// statuses are written by these reconciles) took one object's round trips
// after the other. It matches the EnvoySources' fetch workers
// (sources.DefaultFetchWorkers), so renders at once stay bounded the
// same way.
const envoyConfigWorkers = 4

// setup registers r with mgr, fed by the objects' changes and by the
// requests legate raises (engine outcomes, renders to do again).
func (r *envoyConfigReconciler) setup(mgr manager.Manager, raised *requests, skipNameValidation bool) error {
	err := ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.EnvoyConfig{}).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation, MaxConcurrentReconciles: envoyConfigWorkers}).
		WatchesRawSource(raised).
		Complete(r)
	if err != nil {
		return fmt.Errorf("EnvoyConfig reconciler: %w", err)
	}
	return nil
}

// Reconcile runs one EnvoyConfig through the pipeline and writes its status.
func (r *envoyConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.watches(req.Namespace) {
		return ctrl.Result{}, nil
	}
	if res, wait := r.waitForLead(); wait {
		return res, nil
	}
	src := r.source(req.NamespacedName)
	res, err := src.Fetch(ctx)
	switch {
	case errors.Is(err, kubesrc.ErrGone):
		r.gone(ctx, req.NamespacedName, src)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	if err := r.setRollout(ctx, &v1alpha1.EnvoyConfig{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}, src.Name(), src.Rollout()); err != nil {
		return ctrl.Result{}, err
	}
	synced := r.core.Pipeline().Sync(ctx, src.Name(), res)
	node, cmd := src.RolloutCommand()
	if cmd != "" {
		ec := &v1alpha1.EnvoyConfig{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
		// Only the object's own node, and only when this object owns it:
		// the refusal reads the same whether another namespace serves
		// the node or nobody does.
		refusal := fmt.Sprintf("this EnvoyConfig does not serve node %q", node)
		if err := r.rolloutCommand(ctx, ec, src.Name(), []string{node}, cmd, refusal); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Read before the write: mutate may run several times.
	ro := readiness.RolloutStatus(kuberollout.Views(r.core.Engine(), src.Name(), []string{node}))

	var ec v1alpha1.EnvoyConfig
	write := r.status.update
	if read := src.Read(); read != nil {
		// Fetch read the object from the API server a moment ago: the
		// status is written from it, and read again only on a conflict.
		ec, write = *read, r.status.updateRead
	}
	var was, now *metav1.Condition
	var wasRO *v1alpha1.RolloutStatus
	wrote, err := write(ctx, req.NamespacedName, &ec, func() bool {
		before := ec.Status.DeepCopy()
		readiness.EnvoyConfigStatus(&ec, synced, r.nodeOf(&ec), r.home)
		ec.Status.Rollout = ro.DeepCopy()
		readiness.SetProgressing(&ec.Status.Conditions, ec.Generation, ro)
		was, now, wasRO = readiness.ReadyOf(before.Conditions), readiness.ReadyOf(ec.Status.Conditions), before.Rollout
		return !readiness.EqualStatus(before, &ec.Status)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if wrote {
		r.announce(&ec, was, now)
		r.announceRollout(&ec, wasRO, ec.Status.Rollout)
	}
	return settled(ec.Status.Conditions), nil
}

// settled asks for another look while the configuration is on its way.
func settled(conds []metav1.Condition) ctrl.Result {
	if meta.IsStatusConditionTrue(conds, v1alpha1.ConditionReconciling) {
		return ctrl.Result{RequeueAfter: requeueAfter}
	}
	return ctrl.Result{}
}

func (r *envoyConfigReconciler) source(key types.NamespacedName) *kubesrc.EnvoyConfigSource {
	r.mu.Lock()
	defer r.mu.Unlock()
	src := r.sources[key]
	if src == nil {
		src = kubesrc.NewEnvoyConfigSource(r.client, key)
		r.sources[key] = src
	}
	return src
}

// refs are the EnvoyConfigs whose sources run.
func (r *envoyConfigReconciler) refs() []sources.Ref {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]sources.Ref, 0, len(r.sources))
	for _, key := range slices.Collect(maps.Keys(r.sources)) {
		out = append(out, sources.EnvoyConfigRef(key.Namespace, key.Name))
	}
	return out
}

// gone stops serving the nodes a deleted EnvoyConfig configured, and
// releases them, its claims too, to the sources that were refused them.
func (r *envoyConfigReconciler) gone(ctx context.Context, key types.NamespacedName, src *kubesrc.EnvoyConfigSource) {
	r.core.Pipeline().Remove(ctx, src.Name())
	_ = r.rollouts.Set(src.Name(), nil)
	r.mu.Lock()
	delete(r.sources, key)
	r.mu.Unlock()
}

// nodeOf is the engine's status of ec's node, or only its ID when another
// namespace owns it: nothing of another tenant's revisions, commits or
// proxies reaches ec's status.
func (r *envoyConfigReconciler) nodeOf(ec *v1alpha1.EnvoyConfig) revisions.NodeStatus {
	if owner := r.core.Owner(ec.Spec.NodeID); owner != "" && tenancy.TenantOf(owner) != ec.Namespace {
		return revisions.NodeStatus{NodeID: ec.Spec.NodeID}
	}
	node, _ := r.core.Engine().Node(ec.Spec.NodeID)
	return node
}
