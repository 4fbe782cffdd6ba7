package envoydeployment

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/revisions"
)

// CacheByObject restricts the manager's cache of the kinds the Reconciler
// owns to the objects it made: a cluster's Deployments and Services are
// many, legate's few.
func CacheByObject() map[client.Object]cache.ByObject {
	sel := labels.SelectorFromSet(labels.Set{"app.kubernetes.io/managed-by": "legate"})
	out := map[client.Object]cache.ByObject{}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{}, &appsv1.Deployment{}, &appsv1.DaemonSet{}, &corev1.Service{},
		&policyv1.PodDisruptionBudget{}, &autoscalingv2.HorizontalPodAutoscaler{},
	} {
		out[obj] = cache.ByObject{Label: sel}
	}
	return out
}

// EngineServed reads the revision served a node from the engine.
func EngineServed(e *revisions.Engine) Served {
	return func(node string) *v1alpha1.ServedRevision {
		st, ok := e.Node(node)
		if !ok || st.Published == nil {
			return nil
		}
		p := st.Published
		return &v1alpha1.ServedRevision{Hash: p.Hash, Version: revisions.Short(p.Hash), Commit: p.Commit, Revision: p.Revision}
	}
}
