package readiness

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
)

// What one pass over an EnvoySource says in its status: a sync replaces
// what was fetched and applied, a failed fetch keeps it and says why.
func TestEnvoySourceStatus(t *testing.T) {
	const self = "envoysource/team-a/config"
	const commit = "0123456789abcdef0123456789abcdef01234567"
	before := v1alpha1.EnvoySourceStatus{LastAppliedRevision: "main@sha1:old", Nodes: []string{"edge"}, ArtifactDigest: "sha256:old"}
	git := &sources.Result{Snapshot: sources.Snapshot{Origin: sources.Origin{Kind: sources.KindGit, Ref: "main", Commit: commit, Digest: "sha256:new"}}}
	inSync := revisions.NodeStatus{NodeID: "edge", State: revisions.StateInSync, Published: &revisions.PublishedStatus{Hash: "h"}, History: []revisions.RevisionStatus{{Hash: "h", Source: self}}}
	for _, tc := range []struct {
		name      string
		flux      bool
		res       *sources.Result
		synced    *pipeline.Status
		reason    string
		fetchErr  error
		node      revisions.NodeStatus
		wantNodes []string
		applied   string
		digest    string
		ready     metav1.ConditionStatus
		why       string
	}{
		{
			name: "synced and served", res: git, synced: &pipeline.Status{AppliedRevision: "main@sha1:" + commit, Nodes: []string{"edge", "edge-2"}}, node: inSync,
			wantNodes: []string{"edge", "edge-2"}, applied: "main@sha1:" + commit, digest: "sha256:old", ready: metav1.ConditionTrue, why: ReasonSucceeded,
		},
		{
			name: "a Flux artifact's digest is kept", flux: true, res: git, synced: &pipeline.Status{AppliedRevision: "main@sha1:" + commit, Nodes: []string{"edge"}}, node: inSync,
			wantNodes: []string{"edge"}, applied: "main@sha1:" + commit, digest: "sha256:new", ready: metav1.ConditionTrue, why: ReasonSucceeded,
		},
		{
			name: "invalid content", res: git, synced: &pipeline.Status{AppliedRevision: "main@sha1:old", Invalid: true, Diagnostics: nil}, node: inSync,
			applied: "main@sha1:old", digest: "sha256:old", ready: metav1.ConditionFalse, why: ReasonValidationFailed,
		},
		{
			name: "a failed fetch keeps what was applied", reason: ReasonFetchFailed, fetchErr: errors.New("dial tcp: connection refused"),
			wantNodes: []string{"edge"}, applied: "main@sha1:old", digest: "sha256:old", ready: metav1.ConditionFalse, why: ReasonFetchFailed,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := &v1alpha1.EnvoySource{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "config", Generation: 3}}
			if tc.flux {
				es.Spec.SourceRef = &v1alpha1.FluxSourceRef{Kind: "GitRepository", Name: "config"}
			}
			s := before.DeepCopy()
			verdicts := SourceVerdicts(tc.synced, self, func(string) (revisions.NodeStatus, bool) { return tc.node, true })
			EnvoySourceStatus(s, es, tc.res, tc.synced, tc.reason, tc.fetchErr, verdicts)
			assert.Equal(t, tc.wantNodes, s.Nodes)
			assert.Equal(t, tc.applied, s.LastAppliedRevision)
			assert.Equal(t, tc.digest, s.ArtifactDigest)
			ready := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, tc.ready, ready.Status)
			assert.Equal(t, tc.why, ready.Reason)
			assert.EqualValues(t, 3, ready.ObservedGeneration)
			if tc.synced != nil {
				assert.Equal(t, "main@sha1:"+commit, s.LastAttemptedRevision)
			}
		})
	}
}

// Invalid content, or none, gives no verdicts: nothing of it is served.
func TestSourceVerdicts(t *testing.T) {
	node := func(id string) (revisions.NodeStatus, bool) { return revisions.NodeStatus{NodeID: id}, true }
	assert.Len(t, SourceVerdicts(&pipeline.Status{Nodes: []string{"a", "b"}}, "s", node), 2)
	assert.Empty(t, SourceVerdicts(&pipeline.Status{Nodes: []string{"a"}, Invalid: true}, "s", node))
	assert.Empty(t, SourceVerdicts(nil, "s", node))
}

// Two statuses that differ only in when their conditions changed are
// equal; any other difference is one.
func TestEqualSourceStatus(t *testing.T) {
	a := &v1alpha1.EnvoySourceStatus{Nodes: []string{"edge"}, Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.Unix(1, 0)}}}
	b := a.DeepCopy()
	b.Conditions[0].LastTransitionTime = metav1.Unix(2, 0)
	assert.True(t, EqualSourceStatus(a, b))
	b.Nodes = []string{"edge", "edge-2"}
	assert.False(t, EqualSourceStatus(a, b))
}
