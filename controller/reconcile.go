package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubestore"
	kubesrc "github.com/legate-dev/legate/sources/kube"
)

// What the controller needs of the API server (config/rbac, generated).
// +kubebuilder:rbac:groups=legate.dev,resources=envoyconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=legate.dev,resources=envoyconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=legate.dev,resources=envoyconfigrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=legate.dev,resources=envoyconfigrevisions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one EnvoyConfig through the pipeline and writes its status.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !c.watches(req.Namespace) {
		return ctrl.Result{}, nil
	}
	if res, wait := c.waitForLead(); wait {
		return res, nil
	}
	src := c.source(req.NamespacedName)
	res, err := src.Fetch(ctx)
	switch {
	case errors.Is(err, kubesrc.ErrGone):
		c.gone(ctx, req, src)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	st := c.pipeline.Sync(ctx, src.Name(), res)

	var ec v1alpha1.EnvoyConfig
	if err := c.client.Get(ctx, req.NamespacedName, &ec); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	node := c.nodeOf(&ec)
	before := ec.Status.DeepCopy()
	c.status(&ec, st, node)
	if equalStatus(before, &ec.Status) {
		return c.settled(ec.Status.Conditions), nil
	}
	if err := c.client.Status().Update(ctx, &ec); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil // written meanwhile: read it again
		}
		return ctrl.Result{}, err
	}
	c.announce(&ec, meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionReady), meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionReady))
	return c.settled(ec.Status.Conditions), nil
}

// watches reports whether objects of namespace are reconciled (the cache
// also holds the controller's own namespace, for its revisions).
func (c *Controller) watches(namespace string) bool {
	return c.opts.WatchNamespace == "" || namespace == c.opts.WatchNamespace
}

// announce records a Kubernetes event when the object's readiness changed
// its verdict: published, rejected by validation, rolled back.
func (c *Controller) announce(obj runtime.Object, was, now *metav1.Condition) {
	if kind, reason, note, ok := eventOf(was, now); ok {
		c.recorder.Eventf(obj, nil, kind, reason, "Reconcile", "%s", note)
	}
}

// settled asks for another look while the configuration is on its way.
func (c *Controller) settled(conds []metav1.Condition) ctrl.Result {
	if meta.IsStatusConditionTrue(conds, v1alpha1.ConditionReconciling) {
		return ctrl.Result{RequeueAfter: requeueAfter}
	}
	return ctrl.Result{}
}

func (c *Controller) source(key types.NamespacedName) *kubesrc.EnvoyConfigSource {
	c.mu.Lock()
	defer c.mu.Unlock()
	src := c.sources[key]
	if src == nil {
		src = kubesrc.NewEnvoyConfigSource(c.client, key)
		c.sources[key] = src
	}
	return src
}

// gone stops serving the nodes a deleted EnvoyConfig configured.
func (c *Controller) gone(ctx context.Context, req ctrl.Request, src *kubesrc.EnvoyConfigSource) {
	c.forgetSource(ctx, src.Name())
	c.mu.Lock()
	delete(c.sources, req.NamespacedName)
	c.mu.Unlock()
}

// nodeOf is the engine's status of ec's node, or only its ID when another
// namespace owns it: nothing of another tenant's revisions, commits or
// proxies reaches ec's status.
func (c *Controller) nodeOf(ec *v1alpha1.EnvoyConfig) revisions.NodeStatus {
	if owner := c.ownerOf(ec.Spec.NodeID); owner != "" && tenantOf(owner) != ec.Namespace {
		return revisions.NodeStatus{NodeID: ec.Spec.NodeID}
	}
	node, _ := c.engine.Node(ec.Spec.NodeID)
	return node
}

// status fills ec's status from the pipeline's status of its source and
// the engine's status of its node.
func (c *Controller) status(ec *v1alpha1.EnvoyConfig, st pipeline.Status, node revisions.NodeStatus) {
	s := &ec.Status
	s.ObservedGeneration = ec.Generation
	if token, ok := ec.Annotations[v1alpha1.ReconcileRequestAnnotation]; ok {
		s.LastHandledReconcileAt = token
	}
	v := verdictOf(node, "envoyconfig/"+ec.Namespace+"/"+ec.Name)
	s.ConfigRevisions = s.ConfigRevisions[:0]
	for i := len(node.History) - 1; i >= 0; i-- {
		h := node.History[i]
		s.ConfigRevisions = append(s.ConfigRevisions, v1alpha1.ConfigRevisionRef{
			Version: revisions.Short(h.Hash),
			Ref:     corev1.ObjectReference{Kind: "EnvoyConfigRevision", APIVersion: v1alpha1.GroupVersion.String(), Namespace: c.opts.Namespace, Name: kubestore.RevisionName(node.NodeID, h.Hash)},
		})
	}
	s.DesiredVersion, s.PublishedVersion, s.CacheState, s.Rejection, s.Commit = nil, nil, nil, bounded(v.rejection(), maxConditionMessage), ""
	if v.desired != nil {
		s.DesiredVersion = ptr(revisions.Short(v.desired.Hash))
	}
	if node.Published != nil {
		s.PublishedVersion = ptr(revisions.Short(node.Published.Hash))
		s.Commit = node.Published.Revision
	}
	switch {
	case node.State == revisions.StateRollbackFailed:
		s.CacheState = ptr(v1alpha1.CacheRollbackFailed)
	case node.State == revisions.StateRollback:
		s.CacheState = ptr(v1alpha1.CacheRollback)
	case v.inSync():
		s.CacheState = ptr(v1alpha1.CacheInSync) // MARIN3R's meaning: the desired revision is served
	}
	s.Proxies = &v1alpha1.ProxyCounts{Connected: node.Answers.Connected, Accepted: node.Answers.Accepted, Rejected: node.Answers.Rejected}
	var verdicts []nodeVerdict
	if ec.Spec.NodeID != "" && !st.Invalid {
		verdicts = []nodeVerdict{v}
	}
	judge(ec.Generation, &st, "", nil, verdicts).set(&s.Conditions)
}

func ptr[T any](v T) *T { return &v }

// equalStatus reports whether two statuses say the same, ignoring when
// their conditions last changed.
func equalStatus(a, b *v1alpha1.EnvoyConfigStatus) bool {
	x, y := *a, *b
	x.Conditions, y.Conditions = withoutTransitions(x.Conditions), withoutTransitions(y.Conditions)
	return equality.Semantic.DeepEqual(x, y)
}
