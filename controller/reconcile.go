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
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one EnvoyConfig through the pipeline and writes its status.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
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
	node, _ := c.engine.Node(ec.Spec.NodeID)
	before := ec.Status.DeepCopy()
	c.status(&ec, st, node)
	if equalStatus(before, &ec.Status) {
		return c.settled(&ec), nil
	}
	if err := c.client.Status().Update(ctx, &ec); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil // written meanwhile: read it again
		}
		return ctrl.Result{}, err
	}
	c.announce(&ec, before)
	return c.settled(&ec), nil
}

// maxEventNote is the longest note an events.k8s.io Event takes.
const maxEventNote = 1024

// announce records a Kubernetes event when the object's readiness changed
// its reason: published, rejected by validation, rolled back.
func (c *Controller) announce(ec *v1alpha1.EnvoyConfig, before *v1alpha1.EnvoyConfigStatus) {
	now := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionReady)
	was := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionReady)
	if now == nil || (was != nil && was.Reason == now.Reason && was.Message == now.Message) || now.Reason == "Progressing" {
		return
	}
	kind := corev1.EventTypeNormal
	if now.Status != metav1.ConditionTrue {
		kind = corev1.EventTypeWarning
	}
	note := now.Message
	if len(note) > maxEventNote {
		note = note[:maxEventNote-3] + "..."
	}
	c.recorder.Eventf(ec, nil, kind, now.Reason, "Reconcile", "%s", note)
}

// settled asks for another look while the configuration is on its way.
func (c *Controller) settled(ec *v1alpha1.EnvoyConfig) ctrl.Result {
	if meta.IsStatusConditionTrue(ec.Status.Conditions, v1alpha1.ConditionReconciling) {
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
	st := c.pipeline.Status(src.Name())
	for _, node := range st.Nodes {
		if c.pipeline.Owner(node) == src.Name() {
			if err := c.engine.Forget(ctx, node); err != nil && !errors.Is(err, revisions.ErrNotFound) {
				c.log.Error(err, "could not stop serving the node of a deleted EnvoyConfig", "node", node, "envoyconfig", req.NamespacedName)
			}
		}
	}
	c.mu.Lock()
	delete(c.sources, req.NamespacedName)
	c.mu.Unlock()
}

// status fills ec's status from the pipeline's status of its source and
// the engine's status of its node.
func (c *Controller) status(ec *v1alpha1.EnvoyConfig, st pipeline.Status, node revisions.NodeStatus) {
	s := &ec.Status
	s.ObservedGeneration = ec.Generation
	var desired *revisions.RevisionStatus
	for i := range node.History {
		h := &node.History[i]
		if h.Source == "envoyconfig/"+ec.Namespace+"/"+ec.Name {
			desired = h
			break
		}
	}
	s.ConfigRevisions = s.ConfigRevisions[:0]
	for i := len(node.History) - 1; i >= 0; i-- {
		h := node.History[i]
		s.ConfigRevisions = append(s.ConfigRevisions, v1alpha1.ConfigRevisionRef{
			Version: revisions.Short(h.Hash),
			Ref:     corev1.ObjectReference{Kind: "EnvoyConfigRevision", APIVersion: v1alpha1.GroupVersion.String(), Namespace: c.opts.Namespace, Name: kubestore.RevisionName(node.NodeID, h.Hash)},
		})
	}
	s.DesiredVersion, s.PublishedVersion, s.CacheState, s.Rejection, s.Commit = nil, nil, nil, "", ""
	if desired != nil {
		s.DesiredVersion = ptr(revisions.Short(desired.Hash))
		if desired.Taint != nil {
			s.Rejection = desired.Taint.Message
		}
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
	case desired != nil && node.Published != nil && node.Published.Hash == desired.Hash:
		s.CacheState = ptr(v1alpha1.CacheInSync) // MARIN3R's meaning: the desired revision is served
	}
	s.Proxies = &v1alpha1.ProxyCounts{Connected: node.Answers.Connected, Accepted: node.Answers.Accepted, Rejected: node.Answers.Rejected}

	ready := metav1.Condition{Type: v1alpha1.ConditionReady, ObservedGeneration: ec.Generation}
	reconciling := metav1.Condition{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionFalse, Reason: "Succeeded", ObservedGeneration: ec.Generation}
	stalled := metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionFalse, Reason: "Succeeded", ObservedGeneration: ec.Generation}
	switch {
	case st.Invalid || len(st.Conflicts) > 0 || len(st.ApplyErrors) > 0:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "ValidationFailed", st.Summary()
		stalled.Status, stalled.Reason, stalled.Message = metav1.ConditionTrue, "ValidationFailed", st.Summary()
	case node.State == revisions.StateRollback || node.State == revisions.StateRollbackFailed:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, string(node.State), s.Rejection
		stalled.Status, stalled.Reason, stalled.Message = metav1.ConditionTrue, string(node.State), s.Rejection
	case node.Waiting != nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Waiting", node.Waiting.Message
		reconciling.Status, reconciling.Reason, reconciling.Message = metav1.ConditionTrue, "Waiting", node.Waiting.Message
	case s.CacheState != nil && *s.CacheState == v1alpha1.CacheInSync:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, "Published", "revision "+*s.PublishedVersion+" is served; "+string(node.State)
	default:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Progressing", "the configuration is on its way to the xDS server"
		reconciling.Status, reconciling.Reason = metav1.ConditionTrue, "Progressing"
	}
	for _, cond := range []metav1.Condition{ready, reconciling, stalled} {
		meta.SetStatusCondition(&s.Conditions, cond)
	}
}

func ptr[T any](v T) *T { return &v }

// equalStatus reports whether two statuses say the same, ignoring when
// their conditions last changed.
func equalStatus(a, b *v1alpha1.EnvoyConfigStatus) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	for _, s := range []*v1alpha1.EnvoyConfigStatus{x, y} {
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
	}
	return equality.Semantic.DeepEqual(x, y)
}
