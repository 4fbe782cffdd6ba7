package readiness

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/config/v1alpha1"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 123, time.UTC)

// view is node's rollout of commit at step (from 0) of 3.
func view(node, commit string, phase rollout.Phase, step, onNew, onOld int) revisions.RolloutView {
	return revisions.RolloutView{
		Node: node, Source: src, OnCandidate: onNew, OnStable: onOld, NextGate: "ack",
		Status: rollout.Status{
			Candidate: "cand-" + node + strings.Repeat("0", 20), Stable: "stable-" + node + strings.Repeat("0", 20), Commit: commit,
			Step: step, Steps: 3, Phase: phase, Started: t0, StepStarted: t0.Add(time.Minute), Message: "at step " + node,
		},
	}
}

func TestRolloutStatusOfOneNode(t *testing.T) {
	assert.Nil(t, RolloutStatus(nil), "no rollout, no status.rollout")
	got := RolloutStatus([]revisions.RolloutView{view("edge", "abc", rollout.PhaseProgressing, 1, 2, 8)})
	require.NotNil(t, got)
	assert.Equal(t, "Progressing", got.Phase)
	assert.Equal(t, int32(2), got.Step, "1-based")
	assert.Equal(t, int32(3), got.Total)
	assert.Equal(t, revisions.Short("cand-edge"+strings.Repeat("0", 20)), got.Revision)
	assert.Equal(t, revisions.Short("stable-edge"+strings.Repeat("0", 20)), got.StableRevision)
	assert.Equal(t, "abc", got.Commit)
	assert.Equal(t, "ack", got.Gate)
	assert.Equal(t, "at step edge", got.Message, "one node: its message as it is")
	assert.Equal(t, &v1alpha1.RolloutProxies{New: 2, Old: 8}, got.Proxies)
	assert.Equal(t, t0.Truncate(time.Second), got.StartedAt.Time, "to the second, as the API server keeps it")
	assert.Equal(t, t0.Add(time.Minute).Truncate(time.Second), got.StepStartedAt.Time)

	done := view("edge", "abc", rollout.PhaseSucceeded, 3, 10, 0)
	assert.Equal(t, int32(3), RolloutStatus([]revisions.RolloutView{done}).Step, "a finished rollout stands at its last step")

	held := view("edge", "abc", rollout.PhaseProgressing, 1, 2, 8)
	held.NextGate = "promote"
	assert.Equal(t, "Paused", RolloutStatus([]revisions.RolloutView{held}).Phase, "a person's pause")
}

func TestRolloutStatusOfASourceIsItsSlowestNode(t *testing.T) {
	got := RolloutStatus([]revisions.RolloutView{
		view("edge-b", "new", rollout.PhaseProgressing, 2, 5, 5),
		view("edge-a", "new", rollout.PhasePaused, 1, 1, 9),
		view("edge-c", "old", rollout.PhaseSucceeded, 3, 7, 0), // the new commit left it alone
	})
	require.NotNil(t, got)
	assert.Equal(t, "Paused", got.Phase, "a paused node holds the source back")
	assert.Equal(t, int32(2), got.Step)
	assert.Equal(t, "new", got.Commit)
	assert.Equal(t, &v1alpha1.RolloutProxies{New: 6, Old: 14}, got.Proxies, "summed over the nodes of the newest commit only")
	assert.Equal(t, "node edge-a: at step edge-a (2 nodes rolling out this commit)", got.Message)

	ended := RolloutStatus([]revisions.RolloutView{
		view("edge-a", "new", rollout.PhaseSucceeded, 3, 10, 0),
		view("edge-b", "new", rollout.PhaseFailed, 1, 0, 10),
	})
	assert.Equal(t, "Failed", ended.Phase, "once all ended, a failure is what the source says")
	assert.Contains(t, ended.Message, "node edge-b")
}

func TestRolloutStatusBoundsTheProxysText(t *testing.T) {
	v := view("edge", "abc", rollout.PhaseFailed, 0, 0, 10)
	v.Status.Message = "failed at step 1/3 (10% of proxies): proxy p rejected the candidate: " + strings.Repeat("é", 5000)
	v.Status.Failure = &rollout.Failure{Step: 1, Proxy: "p", Message: "rejected the candidate: " + strings.Repeat("é", 5000)}
	got := RolloutStatus([]revisions.RolloutView{v})
	assert.LessOrEqual(t, len(got.Message), maxRolloutMessage)
	assert.Contains(t, got.Message, "proxy p rejected the candidate")
	assert.Nil(t, got.Analysis, "a proxy's NACK is not an analysis")

	v.Status.Failure = &rollout.Failure{Step: 1, Message: "analysis failed: error-rate: 0.2 > 0.01"}
	assert.Equal(t, &v1alpha1.RolloutAnalysisStatus{Phase: "Failed", Message: "error-rate: 0.2 > 0.01"}, RolloutStatus([]revisions.RolloutView{v}).Analysis)
	v.Status.Failure = nil
	v.Status.Gates = []rollout.GateResult{{Gate: rollout.GateAck, Passed: true}, {Gate: rollout.GateAnalysis, Message: "inconclusive: no data"}}
	assert.Equal(t, &v1alpha1.RolloutAnalysisStatus{Phase: "Inconclusive", Message: "no data"}, RolloutStatus([]revisions.RolloutView{v}).Analysis)
}

func TestSetProgressing(t *testing.T) {
	for _, tc := range []struct {
		name, phase, gate, message string
		status                     metav1.ConditionStatus
		reason                     string
	}{
		{"a step", "Progressing", "ack", "waiting", metav1.ConditionTrue, "Step2"},
		{"its analysis", "Progressing", "analysis", "analysing", metav1.ConditionTrue, ReasonWaitingForAnalysis},
		{"paused", "Paused", "promote", "waiting for promote", metav1.ConditionTrue, v1alpha1.ReasonRolloutPaused},
		{"succeeded", "Succeeded", "", "promoted", metav1.ConditionFalse, v1alpha1.ReasonRolloutSucceeded},
		{"failed", "Failed", "", "failed at step 2/3", metav1.ConditionFalse, v1alpha1.ReasonRolloutFailed},
		{"aborted", "Aborted", "", "aborted at step 2/3 by a person; rolled back", metav1.ConditionFalse, v1alpha1.ReasonRolloutAborted},
		{"superseded", "Aborted", "", revisions.RolloutUnpublished, metav1.ConditionFalse, v1alpha1.ReasonRolloutSuperseded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conds []metav1.Condition
			SetProgressing(&conds, 4, &v1alpha1.RolloutStatus{Phase: tc.phase, Gate: tc.gate, Step: 2, Total: 3, Message: tc.message})
			c := meta.FindStatusCondition(conds, v1alpha1.ConditionProgressing)
			require.NotNil(t, c)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Equal(t, tc.message, c.Message)
			assert.Equal(t, int64(4), c.ObservedGeneration)
			SetProgressing(&conds, 4, nil)
			assert.Empty(t, conds, "no rollout, no condition")
		})
	}
}

func TestRolloutEvents(t *testing.T) {
	at := func(phase string, step int32, rev, commit string) *v1alpha1.RolloutStatus {
		return &v1alpha1.RolloutStatus{Phase: phase, Step: step, Total: 3, Revision: rev, Commit: commit, Message: "m"}
	}
	type ev struct{ kind, reason string }
	for _, tc := range []struct {
		name     string
		was, now *v1alpha1.RolloutStatus
		want     []ev
	}{
		{"nothing", nil, nil, nil},
		{"a first step", nil, at("Progressing", 1, "r1", "c1"), []ev{{corev1.EventTypeNormal, EventRolloutStep}}},
		{"no change", at("Progressing", 1, "r1", "c1"), at("Progressing", 1, "r1", "c1"), nil},
		{"the next step", at("Progressing", 1, "r1", "c1"), at("Progressing", 2, "r1", "c1"), []ev{{corev1.EventTypeNormal, EventRolloutStep}}},
		{"an EnvoySource's leading node changes", at("Progressing", 1, "r1", "c1"), at("Progressing", 1, "r2", "c1"), nil},
		{"paused", at("Progressing", 2, "r1", "c1"), at("Paused", 2, "r1", "c1"), []ev{{corev1.EventTypeNormal, v1alpha1.ReasonRolloutPaused}}},
		{
			"first seen paused at step 2", nil, at("Paused", 2, "r1", "c1"),
			[]ev{{corev1.EventTypeNormal, EventRolloutStep}, {corev1.EventTypeNormal, v1alpha1.ReasonRolloutPaused}},
		},
		{"resumed", at("Paused", 2, "r1", "c1"), at("Progressing", 2, "r1", "c1"), nil},
		{"promoted past the pause", at("Paused", 2, "r1", "c1"), at("Progressing", 3, "r1", "c1"), []ev{{corev1.EventTypeNormal, EventRolloutStep}}},
		{"promoted", at("Paused", 3, "r1", "c1"), at("Succeeded", 3, "r1", "c1"), []ev{{corev1.EventTypeNormal, v1alpha1.ReasonRolloutSucceeded}}},
		{"promotion told once", at("Succeeded", 3, "r1", "c1"), at("Succeeded", 3, "r1", "c1"), nil},
		{"failed", at("Progressing", 1, "r1", "c1"), at("Failed", 1, "r1", "c1"), []ev{{corev1.EventTypeWarning, v1alpha1.ReasonRolloutFailed}}},
		{"aborted", at("Paused", 2, "r1", "c1"), at("Aborted", 2, "r1", "c1"), []ev{{corev1.EventTypeWarning, v1alpha1.ReasonRolloutAborted}}},
		{
			"superseded by a newer commit", at("Progressing", 2, "r1", "c1"), at("Progressing", 1, "r2", "c2"),
			[]ev{{corev1.EventTypeNormal, v1alpha1.ReasonRolloutSuperseded}, {corev1.EventTypeNormal, EventRolloutStep}},
		},
		{"a new rollout after one ended", at("Succeeded", 3, "r1", "c1"), at("Progressing", 1, "r2", "c2"), []ev{{corev1.EventTypeNormal, EventRolloutStep}}},
		{
			"an EnvoyConfig's next generation", at("Progressing", 2, "r1", ""), at("Progressing", 1, "r2", ""),
			[]ev{{corev1.EventTypeNormal, v1alpha1.ReasonRolloutSuperseded}, {corev1.EventTypeNormal, EventRolloutStep}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []ev
			for _, e := range RolloutEvents(tc.was, tc.now) {
				got = append(got, ev{e.Type, e.Reason})
				assert.NotEmpty(t, e.Note)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
