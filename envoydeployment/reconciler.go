package envoydeployment

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pki"
	"github.com/legate-dev/legate/webhook"
)

// FieldOwner is the field manager of every object the Reconciler applies.
const FieldOwner = "legate-envoydeployment"

// Served names the revision legate serves a node now, nil when it serves
// none. It is called concurrently.
type Served func(nodeID string) *v1alpha1.ServedRevision

// Reconciler makes the objects of each EnvoyDeployment and reports their
// state. One reconcile at a time per object (controller-runtime's queue);
// its fields are read-only once it runs.
type Reconciler struct {
	// Client writes, and reads what it writes (not the cache).
	Client client.Client
	// Cache reads EnvoyDeployments and EnvoyConfigs.
	Cache client.Reader
	// Injector makes the Envoy container, as for a sidecar.
	Injector webhook.PodMutator
	// Issuer, when set, issues the node's client certificate for the
	// namespace before the pods need it, and refuses a node the namespace
	// may not be served. Without it, the proxy-certificate reconciler
	// issues it once a pod exists, or someone else provides the Secret.
	Issuer webhook.ProxyIssuer
	// Served is the revision served a node (nil: status shows none).
	Served Served
	// Watches reports whether the home serves a namespace's objects (nil:
	// every namespace).
	Watches  func(namespace string) bool
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr: it reconciles an
// EnvoyDeployment when it, one of its objects or its EnvoyConfig changes.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, skipNameValidation bool) error {
	return ctrl.NewControllerManagedBy(mgr).Named("envoydeployment").
		For(&v1alpha1.EnvoyDeployment{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.DaemonSet{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}).
		Watches(&v1alpha1.EnvoyConfig{}, handler.EnqueueRequestsFromMapFunc(r.referencing)).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation}).
		Complete(r)
}

// referencing maps an EnvoyConfig to the EnvoyDeployments of its
// namespace that reference it: its node or its published revision
// changed.
func (r *Reconciler) referencing(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.EnvoyDeploymentList
	if err := r.Cache.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, ed := range list.Items {
		if name, err := configName(&ed); err == nil && name == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ed.Namespace, Name: ed.Name}})
		}
	}
	return out
}

// configName is the EnvoyConfig spec.envoyConfigRef names. A namespace
// reaches nothing of another: "namespace/name" is accepted for this one
// only, and the refusal names nothing of the other.
func configName(ed *v1alpha1.EnvoyDeployment) (string, error) {
	ref := ed.Spec.EnvoyConfigRef
	ns, name, qualified := strings.Cut(ref, "/")
	if !qualified {
		return ref, nil
	}
	if ns != ed.Namespace {
		return "", fmt.Errorf("spec.envoyConfigRef %q: an EnvoyDeployment may reference only an EnvoyConfig of its own namespace %q", ref, ed.Namespace)
	}
	return name, nil
}

// Reconcile applies one EnvoyDeployment's objects and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if r.Watches != nil && !r.Watches(req.Namespace) {
		return reconcile.Result{}, nil
	}
	var ed v1alpha1.EnvoyDeployment
	if err := r.Cache.Get(ctx, req.NamespacedName, &ed); err != nil {
		// Gone: the garbage collector deletes what it owned.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !ed.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	st := ed.Status.DeepCopy()
	st.ObservedGeneration = ed.Generation
	if v, ok := ed.Annotations[v1alpha1.ReconcileRequestAnnotation]; ok {
		st.LastHandledReconcileAt = v
	}
	v, err := r.reconcile(ctx, &ed, st)
	was := meta.FindStatusCondition(ed.Status.Conditions, v1alpha1.ConditionReady)
	setConditions(st, ed.Generation, v)
	// A refusal is announced once, when it starts, not at every retry.
	if refused := v.stalled || err != nil; refused && r.Recorder != nil && (was == nil || was.Reason != v.reason) {
		r.Recorder.Eventf(&ed, nil, corev1.EventTypeWarning, v.reason, "Reconcile", "%s", v.message)
	}
	if equality.Semantic.DeepEqual(&ed.Status, st) {
		return reconcile.Result{}, err
	}
	if werr := r.writeStatus(ctx, &ed, st); werr != nil {
		return reconcile.Result{}, errors.Join(err, werr)
	}
	return reconcile.Result{}, err
}

// reconcile does the steps in order, each one's failure the verdict.
// An error is returned where a retry may help.
func (r *Reconciler) reconcile(ctx context.Context, ed *v1alpha1.EnvoyDeployment, st *v1alpha1.EnvoyDeploymentStatus) (verdict, error) {
	name, err := configName(ed)
	if err != nil {
		return verdict{status: metav1.ConditionFalse, reason: ReasonInvalidRef, message: err.Error(), stalled: true}, nil
	}
	var ec v1alpha1.EnvoyConfig
	if err := r.Cache.Get(ctx, types.NamespacedName{Namespace: ed.Namespace, Name: name}, &ec); err != nil {
		if apierrors.IsNotFound(err) {
			return verdict{
				status: metav1.ConditionFalse, reason: ReasonEnvoyConfigNotFound,
				message: fmt.Sprintf("spec.envoyConfigRef: no EnvoyConfig %q in namespace %q", name, ed.Namespace),
			}, nil
		}
		return verdict{status: metav1.ConditionFalse, reason: ReasonEnvoyConfigNotFound, message: "reading the EnvoyConfig failed"}, err
	}
	node := ec.Spec.NodeID
	st.NodeID = node
	if r.Issuer != nil {
		if err := r.Issuer.EnsureProxy(ctx, ed.Namespace, pki.ProxySecretName(node), node, false); err != nil {
			return verdict{
				status: metav1.ConditionFalse, reason: ReasonCertificateRefused,
				message: fmt.Sprintf("the proxies' client certificate for node %q: %v", node, err),
			}, err
		}
	}
	objs, err := Build(ed, node, r.Injector)
	if err != nil {
		return verdict{status: metav1.ConditionFalse, reason: ReasonInvalidSpec, message: err.Error(), stalled: true}, nil
	}
	for _, obj := range objs.All() {
		if err := r.claim(ctx, ed, obj); err != nil {
			return verdict{status: metav1.ConditionFalse, reason: ReasonObjectConflict, message: err.Error(), stalled: true}, nil
		}
	}
	for _, obj := range objs.All() {
		if err := r.apply(ctx, obj); err != nil {
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			return verdict{
				status: metav1.ConditionFalse, reason: ReasonApplyFailed,
				message: fmt.Sprintf("%s %s: %v", kind, obj.GetName(), err),
			}, fmt.Errorf("apply %s %s: %w", kind, obj.GetName(), err)
		}
	}
	if err := r.prune(ctx, ed, objs); err != nil {
		return verdict{status: metav1.ConditionFalse, reason: ReasonApplyFailed, message: err.Error()}, err
	}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(objs.Workload), objs.Workload); err != nil {
		return verdict{status: metav1.ConditionFalse, reason: ReasonApplyFailed, message: "reading the workload back failed"}, err
	}
	ro := rolloutOf(objs.Workload)
	st.Kind, st.WorkloadName = ro.kind, objs.Workload.GetName()
	st.Replicas, st.ReadyReplicas, st.UpdatedReplicas = ro.desired, ro.ready, ro.updated
	st.ServedRevision = nil
	if r.Served != nil {
		st.ServedRevision = r.Served(node)
	}
	return judge(ro, st.ServedRevision), nil
}

// apply applies obj server-side as FieldOwner, taking back the fields
// another manager changed (drift). Only the fields legate sets are its:
// the status, and what others add (an HPA's replicas), stay theirs.
func (r *Reconciler) apply(ctx context.Context, obj client.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u, "spec", "template", "metadata", "creationTimestamp")
	return r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}),
		client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// claim refuses to take over an object of a generated object's name that
// someone else made: server-side apply with force would otherwise make
// it legate's.
func (r *Reconciler) claim(ctx context.Context, ed *v1alpha1.EnvoyDeployment, obj client.Object) error {
	existing := &metav1.PartialObjectMetadata{}
	existing.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("read %s %s: %w", existing.Kind, obj.GetName(), err)
	}
	if owner := metav1.GetControllerOf(existing); owner != nil && owner.UID == ed.UID {
		return nil
	}
	return fmt.Errorf("%s %q exists and is not this EnvoyDeployment's: delete it, or rename the EnvoyDeployment", existing.Kind, obj.GetName())
}

// prune deletes what this EnvoyDeployment made and no longer asks for: the
// other workload kind after a change of mode, a Service without ports, a
// PodDisruptionBudget or autoscaler taken out of the spec.
func (r *Reconciler) prune(ctx context.Context, ed *v1alpha1.EnvoyDeployment, objs Objects) error {
	var stale []client.Object
	if _, ds := objs.Workload.(*appsv1.DaemonSet); ds {
		stale = append(stale, &appsv1.Deployment{})
	} else {
		stale = append(stale, &appsv1.DaemonSet{})
	}
	if objs.Service == nil {
		stale = append(stale, &corev1.Service{})
	}
	if objs.PDB == nil {
		stale = append(stale, &policyv1.PodDisruptionBudget{})
	}
	if objs.HPA == nil {
		stale = append(stale, &autoscalingv2.HorizontalPodAutoscaler{})
	}
	for _, obj := range stale {
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ed.Namespace, Name: Name(ed.Name)}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		if owner := metav1.GetControllerOf(obj); owner == nil || owner.UID != ed.UID {
			continue
		}
		if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: ptrTo(obj.GetUID())}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// writeStatus patches the status as computed, reading the object again
// on a conflict.
func (r *Reconciler) writeStatus(ctx context.Context, ed *v1alpha1.EnvoyDeployment, st *v1alpha1.EnvoyDeploymentStatus) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur v1alpha1.EnvoyDeployment
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(ed), &cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if cur.UID != ed.UID {
			return nil
		}
		cur.Status = *st
		return r.Client.Status().Update(ctx, &cur)
	})
}
