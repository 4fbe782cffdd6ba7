package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// everyReplica runs a reconciler on every replica, not on the leader
// alone: each replica serves xDS, so each pushes new secrets and endpoints
// to its own proxies.
var everyReplica = false

// watchSecrets registers the reconciler that reacts to a change of a
// Secret a served configuration refers to: it has SDS read every external
// secret and endpoint set in use again (sds.Server.Refresh; there is no
// per-Secret read), and push new versions to the nodes whose material
// differs from what they were served, so only the proxies that use the
// changed Secret (or one that changed meanwhile) get an update. A Secret
// no configuration refers to reads nothing. It watches the Secrets'
// metadata only: their data is read, when referenced, by the resolver,
// and never kept in a cache.
func (c *Controller) watchSecrets(skipNameValidation bool) error {
	err := ctrl.NewControllerManagedBy(c.mgr).Named("secrets").
		For(&corev1.Secret{}, builder.OnlyMetadata).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation, NeedLeaderElection: &everyReplica}).
		Complete(reconcile.Func(func(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
			if c.core.SDS().References(req.Namespace + "/" + req.Name) {
				c.core.SDS().Refresh()
			}
			return ctrl.Result{}, nil
		}))
	if err != nil {
		return fmt.Errorf("secret reconciler: %w", err)
	}
	return nil
}

// watchEndpointSlices registers the reconciler that pushes new endpoints
// when an EndpointSlice of a namespace that a served configuration builds
// endpoints from changes: as a new version of the load assignments only,
// no new revision. Events are keyed by namespace, so that a burst of
// slice updates (a rollout) coalesces into few refreshes.
func (c *Controller) watchEndpointSlices(skipNameValidation bool) error {
	byNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace()}}}
	})
	err := ctrl.NewControllerManagedBy(c.mgr).Named("endpointslices").
		Watches(&discoveryv1.EndpointSlice{}, byNamespace).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation, NeedLeaderElection: &everyReplica}).
		Complete(reconcile.Func(func(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
			if c.core.SDS().ReferencesEndpoints(req.Namespace) {
				c.core.SDS().RefreshEndpoints(req.Namespace)
			}
			return ctrl.Result{}, nil
		}))
	if err != nil {
		return fmt.Errorf("EndpointSlice reconciler: %w", err)
	}
	return nil
}
