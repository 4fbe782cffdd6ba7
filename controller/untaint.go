package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/revisions"
)

// untaintReconciler clears a revision's taint when its
// EnvoyConfigRevision carries v1alpha1.UntaintAnnotation: the
// kubectl-native untaint (kubectl annotate ecr NAME legate.dev/untaint=true).
// It keeps no state of its own.
type untaintReconciler struct {
	*shared
}

// setup registers r with mgr, for the revisions of the controller's
// namespace that carry the annotation.
func (r *untaintReconciler) setup(mgr manager.Manager, skipNameValidation bool) error {
	asked := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		_, ok := obj.GetAnnotations()[v1alpha1.UntaintAnnotation]
		return ok && obj.GetNamespace() == r.home
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("untaint").
		For(&v1alpha1.EnvoyConfigRevision{}, builder.WithPredicates(asked), builder.OnlyMetadata). // no revision content in the cache
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("untaint reconciler: %w", err)
	}
	return nil
}

// Reconcile clears the taint the revision's annotation asks to clear,
// tells how with an event, and takes the annotation away.
func (r *untaintReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if res, wait := r.waitForLead(); wait {
		return res, nil
	}
	var rev v1alpha1.EnvoyConfigRevision
	if err := r.client.Get(ctx, req.NamespacedName, &rev); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if _, ok := rev.Annotations[v1alpha1.UntaintAnnotation]; !ok {
		return ctrl.Result{}, nil
	}
	was := rev.Status.Tainted
	err := r.core.Engine().ClearTaint(ctx, rev.Spec.NodeID, rev.Spec.Hash)
	switch {
	case errors.Is(err, revisions.ErrNotFound):
		r.recorder.Eventf(&rev, nil, corev1.EventTypeWarning, "UntaintFailed", "Untaint", "node %s has no revision %s any more", rev.Spec.NodeID, revisions.Short(rev.Spec.Hash))
	case err != nil:
		return ctrl.Result{}, err // retried
	case was:
		r.recorder.Eventf(&rev, nil, corev1.EventTypeNormal, "Untainted", "Untaint", "the taint of revision %s of node %s is cleared; it may be published again", revisions.Short(rev.Spec.Hash), rev.Spec.NodeID)
	default:
		r.recorder.Eventf(&rev, nil, corev1.EventTypeNormal, "Untainted", "Untaint", "revision %s of node %s was not tainted; nothing to clear", revisions.Short(rev.Spec.Hash), rev.Spec.NodeID)
	}
	// The request is handled: take the annotation away, so that a later
	// taint is not cleared by the same request.
	patch := []byte(`{"metadata":{"annotations":{"` + v1alpha1.UntaintAnnotation + `":null}}}`)
	if err := r.client.Patch(ctx, &rev, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}
