package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kubesrc "github.com/legate-dev/legate/sources/kube"
)

// PolicyLabel marks the policy ConfigMaps of the controller's namespace
// (sources/kube.PolicyLabel).
const PolicyLabel = kubesrc.PolicyLabel

// policyReconciler reads the policy ConfigMaps of the controller's
// namespace and, when what they say changes, has every source rendered
// again. It owns the policy set in force.
type policyReconciler struct {
	*shared
	// set is what every render obeys: the policy directory's
	// (Options.PolicyDir, read once at start) and the ConfigMaps' entries.
	set *kubesrc.PolicySet
	// rerender asks for a reconcile of a source (Controller.trigger).
	rerender func(source string)
}

func newPolicyReconciler(s *shared, dir map[string][]byte, rerender func(string)) *policyReconciler {
	return &policyReconciler{shared: s, set: kubesrc.NewPolicySet(dir), rerender: rerender}
}

// setup registers r with mgr, for the labelled ConfigMaps of the
// controller's namespace.
func (r *policyReconciler) setup(mgr manager.Manager, skipNameValidation bool) error {
	labelled := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		_, ok := obj.GetLabels()[PolicyLabel]
		return ok && obj.GetNamespace() == r.home
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("policies").
		For(&corev1.ConfigMap{}, builder.WithPredicates(labelled)).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("policy reconciler: %w", err)
	}
	return nil
}

// Reconcile reads every policy ConfigMap (any of them changed) and
// re-renders every source when the set differs from the one in force.
func (r *policyReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	set, err := r.read(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !r.set.Replace(set) {
		return ctrl.Result{}, nil
	}
	r.log.Info("policies changed; every source is rendered again", "policies", len(set))
	for _, source := range r.core.Pipeline().Invalidate() {
		r.rerender(source)
	}
	return ctrl.Result{}, nil
}

// read reads the policy set from the policy directory and the labelled
// ConfigMaps in the cache (every replica has it, so that the admission
// webhook checks objects against the set the leader renders with).
func (r *policyReconciler) read(ctx context.Context) (map[string][]byte, error) {
	set, over, err := r.set.Read(ctx, r.cache, r.home)
	if over != "" {
		r.log.Error(nil, "policy ConfigMaps hold more than the limit; the rest are not read", "limit", kubesrc.MaxPolicyBytes, "configmap", over)
	}
	return set, err
}
