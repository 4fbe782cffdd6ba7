package readiness

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubestore"
	"github.com/legate-dev/legate/sources"
)

// EnvoyConfigStatus fills ec's status from what the pipeline said of its
// source (synced) and the engine's status of its node; its revisions are
// EnvoyConfigRevisions of namespace home.
func EnvoyConfigStatus(ec *v1alpha1.EnvoyConfig, synced pipeline.Status, node revisions.NodeStatus, home string) {
	s := &ec.Status
	s.ObservedGeneration = ec.Generation
	if token, ok := ec.Annotations[v1alpha1.ReconcileRequestAnnotation]; ok {
		s.LastHandledReconcileAt = token
	}
	v := VerdictOf(node, sources.EnvoyConfigRef(ec.Namespace, ec.Name).String())
	s.ConfigRevisions = s.ConfigRevisions[:0]
	for i := len(node.History) - 1; i >= 0; i-- {
		h := node.History[i]
		s.ConfigRevisions = append(s.ConfigRevisions, v1alpha1.ConfigRevisionRef{
			Version: revisions.Short(h.Hash),
			Ref:     corev1.ObjectReference{Kind: "EnvoyConfigRevision", APIVersion: v1alpha1.GroupVersion.String(), Namespace: home, Name: kubestore.RevisionName(node.NodeID, h.Hash)},
		})
	}
	s.DesiredVersion, s.PublishedVersion, s.CacheState, s.Rejection, s.Commit = nil, nil, nil, Bounded(v.Rejection(), MaxConditionMessage), ""
	if v.Desired != nil {
		s.DesiredVersion = ptr(revisions.Short(v.Desired.Hash))
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
	case v.InSync():
		s.CacheState = ptr(v1alpha1.CacheInSync) // MARIN3R's meaning: the desired revision is served
	}
	// State is what legate status and the page say (pipeline/nodestate):
	// Pending while no proxy answered, Rejected after a refused update.
	// Nothing is said of a node another namespace owns.
	s.State = ""
	if node.State != "" || synced.Invalid {
		s.State = string(nodestate.Of(nodestate.Input{Engine: node.State, NewestRejected: synced.Invalid}))
	}
	s.Proxies = &v1alpha1.ProxyCounts{Connected: node.Answers.Connected, Accepted: node.Answers.Accepted, Rejected: node.Answers.Rejected}
	var verdicts []Verdict
	if ec.Spec.NodeID != "" && !synced.Invalid {
		verdicts = []Verdict{v}
	}
	Of(ec.Generation, &synced, "", nil, verdicts).Set(&s.Conditions)
}

func ptr[T any](v T) *T { return &v }

// EqualStatus reports whether two statuses say the same, ignoring when
// their conditions last changed.
func EqualStatus(a, b *v1alpha1.EnvoyConfigStatus) bool {
	x, y := *a, *b
	x.Conditions, y.Conditions = WithoutTransitions(x.Conditions), WithoutTransitions(y.Conditions)
	return equality.Semantic.DeepEqual(x, y)
}

// WithoutTransitions is a copy of cs without the times they last changed,
// to compare what two statuses say.
func WithoutTransitions(cs []metav1.Condition) []metav1.Condition {
	out := slices.Clone(cs)
	for i := range out {
		out[i].LastTransitionTime = metav1.Time{}
	}
	return out
}

// ReadyOf is the Ready condition among conds, copied (nil: none).
func ReadyOf(conds []metav1.Condition) *metav1.Condition {
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c != nil {
		cp := *c
		return &cp
	}
	return nil
}
