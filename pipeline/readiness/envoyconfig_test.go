package readiness

import (
	"testing"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/kubestore"
)

// What an EnvoyConfig's status says, from the pipeline's word on its
// source and the engine's status of its node.
func TestEnvoyConfigStatus(t *testing.T) {
	const (
		self  = "envoyconfig/team-a/edge"
		good  = "1111111111111111111111111111111111111111111111111111111111111111"
		bad   = "2222222222222222222222222222222222222222222222222222222222222222"
		other = "3333333333333333333333333333333333333333333333333333333333333333"
	)
	inSync := revisions.NodeStatus{
		NodeID: "edge", State: revisions.StateInSync,
		Published: &revisions.PublishedStatus{Hash: good, Revision: "team-a/edge@1"},
		History:   []revisions.RevisionStatus{{Hash: good, Source: self}},
		Answers:   revisions.AnswerCounts{Connected: 2, Accepted: 2},
	}
	rollback := inSync
	rollback.State = revisions.StateRollback
	rollback.History = []revisions.RevisionStatus{
		{Hash: bad, Source: self, Tainted: true, Taint: &revisions.Taint{Message: "rejected by 2 of 2 proxies"}},
		{Hash: good, Source: self},
	}
	rollback.Answers = revisions.AnswerCounts{Connected: 2, Rejected: 2}
	failed := rollback
	failed.State = revisions.StateRollbackFailed
	pending := inSync
	pending.State, pending.Answers = revisions.StatePending, revisions.AnswerCounts{}
	foreign := revisions.NodeStatus{NodeID: "edge"} // another namespace owns it: its ID only
	// served from another source's revision: this one's is not the newest
	elsewhere := inSync
	elsewhere.Published = &revisions.PublishedStatus{Hash: other}
	elsewhere.History = []revisions.RevisionStatus{{Hash: other, Source: "envoyconfig/team-a/older"}, {Hash: good, Source: self}}

	for _, tc := range []struct {
		name                string
		node                revisions.NodeStatus
		synced              pipeline.Status
		cache               *string
		state               string
		desired, published  string
		rejection, commit   string
		revisions           []string
		ready               metav1.ConditionStatus
		reason              string
		connected, rejected int
	}{
		{
			name: "the desired revision is served", node: inSync, cache: ptr(string(v1alpha1.CacheInSync)), state: "InSync",
			desired: revisions.Short(good), published: revisions.Short(good), commit: "team-a/edge@1",
			revisions: []string{revisions.Short(good)}, ready: metav1.ConditionTrue, reason: fluxmeta.SucceededReason, connected: 2,
		},
		{
			name: "rolled back", node: rollback, cache: ptr(string(v1alpha1.CacheRollback)), state: "Rollback",
			desired: revisions.Short(bad), published: revisions.Short(good), commit: "team-a/edge@1", rejection: "rejected by 2 of 2 proxies",
			revisions: []string{revisions.Short(good), revisions.Short(bad)}, ready: metav1.ConditionFalse, reason: ReasonRollback, connected: 2, rejected: 2,
		},
		{
			name: "every revision rejected", node: failed, cache: ptr(string(v1alpha1.CacheRollbackFailed)), state: "RollbackFailed",
			desired: revisions.Short(bad), published: revisions.Short(good), commit: "team-a/edge@1", rejection: "rejected by 2 of 2 proxies",
			revisions: []string{revisions.Short(good), revisions.Short(bad)}, ready: metav1.ConditionFalse, reason: ReasonRollbackFailed, connected: 2, rejected: 2,
		},
		{
			name: "another namespace's node tells nothing of it", node: foreign,
			ready: metav1.ConditionFalse, reason: fluxmeta.ProgressingReason,
		},
		{
			name: "another source's revision is served", node: elsewhere, state: "InSync", desired: revisions.Short(good), published: revisions.Short(other),
			commit: "", revisions: []string{revisions.Short(good), revisions.Short(other)}, ready: metav1.ConditionFalse, reason: fluxmeta.ProgressingReason, connected: 2,
		},
		{
			name: "a rejected render stalls whatever is served", node: inSync, synced: pipeline.Status{Invalid: true, DiagnosticCount: 1},
			cache: ptr(string(v1alpha1.CacheInSync)), state: "Rejected", desired: revisions.Short(good), published: revisions.Short(good), commit: "team-a/edge@1",
			revisions: []string{revisions.Short(good)}, ready: metav1.ConditionFalse, reason: ReasonValidationFailed, connected: 2,
		},
		{
			name: "no proxy connected: Pending, as legate status says", node: pending, cache: ptr(string(v1alpha1.CacheInSync)), state: "Pending",
			desired: revisions.Short(good), published: revisions.Short(good), commit: "team-a/edge@1",
			revisions: []string{revisions.Short(good)}, ready: metav1.ConditionTrue, reason: fluxmeta.SucceededReason,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ec := &v1alpha1.EnvoyConfig{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "edge", Generation: 3, Annotations: map[string]string{v1alpha1.ReconcileRequestAnnotation: "now"}},
				Spec:       v1alpha1.EnvoyConfigSpec{NodeID: "edge"},
			}
			ec.Status.ConfigRevisions = []v1alpha1.ConfigRevisionRef{{Version: "stale"}}
			EnvoyConfigStatus(ec, tc.synced, tc.node, "legate-system")
			s := ec.Status
			assert.Equal(t, int64(3), s.ObservedGeneration)
			assert.Equal(t, "now", s.LastHandledReconcileAt)
			assert.Equal(t, tc.cache, s.CacheState)
			assert.Equal(t, tc.state, s.State)
			assert.Equal(t, tc.desired, deref(s.DesiredVersion), "desired")
			assert.Equal(t, tc.published, deref(s.PublishedVersion), "published")
			assert.Equal(t, tc.rejection, s.Rejection)
			assert.Equal(t, tc.commit, s.Commit)
			var versions []string
			for _, r := range s.ConfigRevisions {
				versions = append(versions, r.Version)
				assert.Equal(t, "legate-system", r.Ref.Namespace)
				assert.Equal(t, "EnvoyConfigRevision", r.Ref.Kind)
			}
			assert.Equal(t, tc.revisions, versions, "oldest first, the stale list replaced")
			for _, r := range s.ConfigRevisions {
				h := map[string]string{revisions.Short(good): good, revisions.Short(bad): bad, revisions.Short(other): other}[r.Version]
				assert.Equal(t, kubestore.RevisionName("edge", h), r.Ref.Name)
			}
			require.NotNil(t, s.Proxies)
			assert.Equal(t, tc.connected, s.Proxies.Connected)
			assert.Equal(t, tc.rejected, s.Proxies.Rejected)
			ready := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, tc.ready, ready.Status)
			assert.Equal(t, tc.reason, ready.Reason)
			assert.Equal(t, int64(3), ready.ObservedGeneration)
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
