package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// watchSecrets registers the reconciler that pushes a Secret's new key
// material to the proxies whose configuration uses it. It watches the
// Secrets' metadata only: their data is read, when referenced, by the
// resolver, and never kept in a cache.
func (c *Controller) watchSecrets(skipNameValidation bool) error {
	err := ctrl.NewControllerManagedBy(c.mgr).Named("secrets").
		For(&corev1.Secret{}, builder.OnlyMetadata).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation}).
		Complete(reconcile.Func(func(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
			if c.secrets.References(req.Namespace + "/" + req.Name) {
				c.secrets.Refresh()
			}
			return ctrl.Result{}, nil
		}))
	if err != nil {
		return fmt.Errorf("secret reconciler: %w", err)
	}
	return nil
}
