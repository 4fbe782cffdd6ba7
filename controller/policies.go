package controller

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// PolicyLabel marks a ConfigMap of the controller's namespace whose *.cue
// entries are CUE policies every configuration obeys (EnvoyConfigs,
// EnvoySources, with the policies of their own trees), so that an ad-hoc
// kubectl apply cannot leave out the rules a Git repository obeys. Only
// the controller's namespace is read: whoever can write there runs legate.
const PolicyLabel = "legate.dev/policy"

// maxPolicyBytes bounds the policies read, all together.
const maxPolicyBytes = 1 << 20

// readPolicyDir reads the *.cue files of dir (Options.PolicyDir), named
// "policy-dir/<file>" in diagnostics.
func readPolicyDir(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if dir == "" {
		return out, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("policy directory: %w", err)
	}
	total := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".cue") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("policy directory: %w", err)
		}
		if total += len(data); total > maxPolicyBytes {
			return nil, fmt.Errorf("policy directory %s holds more than %d bytes of policies", dir, maxPolicyBytes)
		}
		out["policy-dir/"+e.Name()] = data
	}
	return out, nil
}

// policies is the set every render obeys now.
func (c *Controller) policies() map[string][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.policySet
}

// watchPolicies registers the reconciler that reads the policy ConfigMaps
// and, when what they say changes, renders every source again.
func (c *Controller) watchPolicies(skipNameValidation bool) error {
	labelled := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		_, ok := obj.GetLabels()[PolicyLabel]
		return ok && obj.GetNamespace() == c.opts.Namespace
	})
	err := ctrl.NewControllerManagedBy(c.mgr).Named("policies").
		For(&corev1.ConfigMap{}, builder.WithPredicates(labelled)).
		WithOptions(crcontroller.Options{SkipNameValidation: &skipNameValidation}).
		Complete(reconcile.Func(c.reconcilePolicies))
	if err != nil {
		return fmt.Errorf("policy reconciler: %w", err)
	}
	return nil
}

// reconcilePolicies reads every policy ConfigMap (any of them changed) and
// re-renders every source when the set differs from the one in force.
func (c *Controller) reconcilePolicies(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	set, err := c.readPolicies(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	c.mu.Lock()
	same := maps.EqualFunc(set, c.policySet, func(a, b []byte) bool { return string(a) == string(b) })
	c.policySet = set
	c.mu.Unlock()
	if same {
		return ctrl.Result{}, nil
	}
	c.log.Info("policies changed; every source is rendered again", "policies", len(set))
	for _, source := range c.pipeline.Invalidate() {
		c.trigger(source)
	}
	return ctrl.Result{}, nil
}

// readPolicies reads the policy set from the policy directory and the
// labelled ConfigMaps in the cache (every replica has it, so the
// admission webhook judges with the set the leader renders with).
func (c *Controller) readPolicies(ctx context.Context) (map[string][]byte, error) {
	var list corev1.ConfigMapList
	if err := c.mgr.GetClient().List(ctx, &list, client.InNamespace(c.opts.Namespace), client.HasLabels{PolicyLabel}); err != nil {
		return nil, err
	}
	set := maps.Clone(c.dirPolicies)
	total := 0
	for _, cm := range list.Items {
		for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
			if !strings.HasSuffix(key, ".cue") {
				continue
			}
			if total += len(cm.Data[key]); total > maxPolicyBytes {
				c.log.Error(nil, "policy ConfigMaps hold more than the limit; the rest are not read", "limit", maxPolicyBytes, "configmap", cm.Name)
				return set, nil
			}
			set["configmap/"+cm.Namespace+"/"+cm.Name+"/"+key] = []byte(cm.Data[key])
		}
	}
	return set, nil
}
