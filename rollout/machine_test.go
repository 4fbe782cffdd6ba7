package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func mustPlan(t *testing.T, doc string) *Plan {
	t.Helper()
	plan, err := compileYAML(t, doc)
	require.NoError(t, err)
	return plan
}

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// TestFourStepRollout walks the example to the end: each step
// serves its share, waits for ACKs, soaks, and moves on.
func TestFourStepRollout(t *testing.T) {
	plan := mustPlan(t, "steps: [{proxies: 10%}, {pause: 30s}, {nodes: [edge-*]}, {proxies: 50%}, {pause: {}}]\nsoak: 10s")
	st := Start(plan, nil, "cand", "stable", "abc", t0)

	st, act := Decide(plan, st, Observation{Now: at(0)})
	assert.Equal(t, 1000, act.Share, "the first step serves its share")
	assert.Equal(t, at(30), act.WakeAt, "ackTimeout")
	assert.Contains(t, st.Message, "step 1/5 (10% of proxies)")

	st, act = Decide(plan, st, Observation{Now: at(1), InStep: 2, Acked: 1, Waiting: "p-2"})
	assert.Equal(t, 0, st.Step)
	assert.Contains(t, st.Message, "waiting at step 1/5 (10% of proxies) for ACKs: 1 of 2 proxies")
	assert.Equal(t, at(30), act.WakeAt)

	st, act = Decide(plan, st, Observation{Now: at(2), InStep: 2, Acked: 2})
	assert.Equal(t, 0, st.Step, "the soak holds the step")
	assert.Equal(t, at(12), act.WakeAt)
	require.Len(t, st.Gates, 1)
	assert.Equal(t, GateAck, st.Gates[0].Gate)

	st, act = Decide(plan, st, Observation{Now: at(12), InStep: 2, Acked: 2})
	assert.Equal(t, 1, st.Step, "soak over: next step")
	assert.Equal(t, 1000, act.Share, "a pause keeps the share")

	st, act = Decide(plan, st, Observation{Now: at(13)})
	assert.Equal(t, at(42), act.WakeAt)
	assert.Contains(t, st.Message, "pausing at step 2/5 (pause 30s)")
	st, _ = Decide(plan, st, Observation{Now: at(42)})
	assert.Equal(t, 2, st.Step)

	// A selected node serves every proxy at a nodes step.
	st, act = Decide(plan, st, Observation{Now: at(42), Selected: true})
	assert.Equal(t, Buckets, act.Share)
	st, _ = Decide(plan, st, Observation{Now: at(43), Selected: true, InStep: 20, Acked: 20})
	st, _ = Decide(plan, st, Observation{Now: at(53), Selected: true, InStep: 20, Acked: 20})
	assert.Equal(t, 3, st.Step)
	st, act = Decide(plan, st, Observation{Now: at(53), InStep: 20, Acked: 20})
	assert.Equal(t, Buckets, act.Share, "a node that took every proxy keeps them")
	st, _ = Decide(plan, st, Observation{Now: at(54), InStep: 20, Acked: 20})
	st, _ = Decide(plan, st, Observation{Now: at(64), InStep: 20, Acked: 20})
	assert.Equal(t, 4, st.Step)

	st, act = Decide(plan, st, Observation{Now: at(100), InStep: 20, Acked: 20})
	assert.Equal(t, PhasePaused, st.Phase, "an untimed pause waits for promote")
	assert.False(t, act.Promote)
	st, _ = Decide(plan, st, Observation{Now: at(1000), InStep: 20, Acked: 20})
	assert.Equal(t, PhasePaused, st.Phase, "however long it takes")

	st, err := Apply(plan, st, CommandPromote, at(1001))
	require.NoError(t, err)
	assert.Equal(t, PhaseSucceeded, st.Phase)
	_, act = Decide(plan, st, Observation{Now: at(1002)})
	assert.True(t, act.Promote)
	assert.Equal(t, Buckets, act.Share)
}

func TestUnselectedNodeWaitsForPeers(t *testing.T) {
	plan := mustPlan(t, "steps: [{nodes: [edge-canary-*]}, {proxies: 100%}]")
	st := Start(plan, nil, "cand", "stable", "", t0)
	st, act := Decide(plan, st, Observation{Now: at(0)})
	assert.Equal(t, 0, act.Share, "a node the step does not take keeps the stable revision")
	assert.Contains(t, st.Message, "for the nodes it takes")
	st, _ = Decide(plan, st, Observation{Now: at(1), PeersDone: true})
	assert.Equal(t, 1, st.Step)
}

func TestCanaryNACK(t *testing.T) {
	for _, tc := range []struct {
		onFailure string
		phase     Phase
		rollback  bool
		share     int
	}{
		{"rollback", PhaseFailed, true, 0},
		{"pause", PhasePaused, false, 1000},
	} {
		t.Run(tc.onFailure, func(t *testing.T) {
			plan := mustPlan(t, "steps: [{proxies: 10%}, {proxies: 50%}]\nonFailure: "+tc.onFailure)
			st := Start(plan, nil, "cand", "stable", "abc", t0)
			st, _ = Decide(plan, st, Observation{Now: at(0)})
			st, act := Decide(plan, st, Observation{Now: at(1), InStep: 2, Acked: 1, Rejection: &Rejection{Proxy: "p-3", Error: "unknown field foo"}})
			assert.Equal(t, tc.phase, st.Phase)
			assert.Equal(t, tc.rollback, act.Rollback)
			assert.Equal(t, tc.share, act.Share)
			require.NotNil(t, st.Failure)
			assert.Equal(t, Failure{Step: 1, Describe: "10% of proxies", Proxy: "p-3", Message: "rejected the candidate: unknown field foo"}, *st.Failure)
			assert.Contains(t, st.Message, "failed at step 1/2 (10% of proxies): proxy p-3 rejected the candidate: unknown field foo")
		})
	}
}

func TestAckTimeout(t *testing.T) {
	plan := mustPlan(t, "steps: [{proxies: 10%}]\nackTimeout: 5s")
	st := Start(plan, nil, "cand", "stable", "", t0)
	st, _ = Decide(plan, st, Observation{Now: at(0)})
	st, _ = Decide(plan, st, Observation{Now: at(4), InStep: 3, Acked: 2, Waiting: "p-9"})
	assert.Equal(t, PhaseProgressing, st.Phase)
	st, act := Decide(plan, st, Observation{Now: at(5), InStep: 3, Acked: 2, Waiting: "p-9"})
	assert.Equal(t, PhaseFailed, st.Phase)
	assert.True(t, act.Rollback)
	assert.Equal(t, "p-9", st.Failure.Proxy)
	assert.Contains(t, st.Failure.Message, "did not ACK the candidate within 5s")
}

func TestRestartsFailTheStep(t *testing.T) {
	plan := mustPlan(t, "steps: [{proxies: 10%}]\nsoak: 1m\nmaxRestarts: 2")
	st := Start(plan, nil, "cand", "stable", "", t0)
	st, _ = Decide(plan, st, Observation{Now: at(0)})
	st, _ = Decide(plan, st, Observation{Now: at(1), InStep: 1, Acked: 1, Restarts: 2, RestartProxy: "p-1"})
	assert.Equal(t, PhaseProgressing, st.Phase, "maxRestarts itself is allowed")
	st, _ = Decide(plan, st, Observation{Now: at(2), InStep: 1, Acked: 1, Restarts: 3, RestartProxy: "p-1"})
	assert.Equal(t, PhaseFailed, st.Phase)
	assert.Contains(t, st.Message, "proxy p-1 reconnected 3 times during the step (maxRestarts 2)")
}

func TestAnalysisGate(t *testing.T) {
	plan := mustPlan(t, "steps: [{proxies: 10%}, {proxies: 20%}]\nanalysis: {count: 1}")
	start := func() Status {
		st := Start(plan, nil, "cand", "stable", "", t0)
		st, _ = Decide(plan, st, Observation{Now: at(0)})
		st, act := Decide(plan, st, Observation{Now: at(1), InStep: 1, Acked: 1})
		require.True(t, act.Analyze, "after the ACK and the soak comes the analysis")
		require.Equal(t, 0, st.Step)
		return st
	}
	st, _ := Decide(plan, start(), Observation{Now: at(2), InStep: 1, Acked: 1, Analysis: &AnalysisResult{Step: 1, Verdict: VerdictPass}})
	assert.Equal(t, 1, st.Step, "pass: next step")

	st, act := Decide(plan, start(), Observation{Now: at(2), InStep: 1, Acked: 1, Analysis: &AnalysisResult{Step: 1, Verdict: VerdictFail, Message: "error rate 7%"}})
	assert.True(t, act.Rollback)
	assert.Contains(t, st.Failure.Message, "analysis failed: error rate 7%")

	st, act = Decide(plan, start(), Observation{Now: at(2), InStep: 1, Acked: 1, Analysis: &AnalysisResult{Step: 1, Verdict: VerdictInconclusive, Message: "no data"}})
	assert.Equal(t, PhasePaused, st.Phase, "inconclusive pauses, as in Argo Rollouts")
	assert.False(t, act.Rollback)
	st, err := Apply(plan, st, CommandResume, at(3))
	require.NoError(t, err)
	_, _ = Decide(plan, st, Observation{Now: at(3), InStep: 1, Acked: 1})
	st, act = Decide(plan, st, Observation{Now: at(4), InStep: 1, Acked: 1, Analysis: &AnalysisResult{Step: 1, Verdict: VerdictInconclusive}})
	assert.True(t, act.Analyze, "resume asks for a new analysis: the old verdict does not count")
	assert.Equal(t, PhaseProgressing, st.Phase)

	// A verdict for another step does not count.
	_, act = Decide(plan, start(), Observation{Now: at(2), InStep: 1, Acked: 1, Analysis: &AnalysisResult{Step: 2, Verdict: VerdictPass}})
	assert.True(t, act.Analyze)
}

func TestCommands(t *testing.T) {
	plan := mustPlan(t, "steps: [{proxies: 10%}, {proxies: 50%}]\nonFailure: pause")
	st := Start(plan, nil, "cand", "stable", "", t0)
	st, _ = Decide(plan, st, Observation{Now: at(0)})

	st, err := Apply(plan, st, CommandPause, at(1))
	require.NoError(t, err)
	st, act := Decide(plan, st, Observation{Now: at(2), InStep: 1, Acked: 1})
	assert.Equal(t, 0, st.Step, "a paused rollout does not advance")
	assert.Equal(t, 1000, act.Share)
	assert.Contains(t, st.Message, "paused at step 1/2")
	_, act = Decide(plan, st, Observation{Now: at(2), InStep: 1, Rejection: &Rejection{Proxy: "p", Error: "bad"}})
	assert.Equal(t, 1000, act.Share, "a NACK still fails a paused rollout")

	st, err = Apply(plan, st, CommandResume, at(3))
	require.NoError(t, err)
	st, _ = Decide(plan, st, Observation{Now: at(3), InStep: 1, Acked: 1})
	assert.Equal(t, 1, st.Step)

	// A failure held by onFailure: pause needs promote or abort.
	st, _ = Decide(plan, st, Observation{Now: at(4)})
	st, _ = Decide(plan, st, Observation{Now: at(5), InStep: 5, Rejection: &Rejection{Proxy: "p-4", Error: "bad"}})
	require.Equal(t, PhasePaused, st.Phase)
	_, err = Apply(plan, st, CommandResume, at(6))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "promote or abort")

	ab, err := Apply(plan, st, CommandAbort, at(6))
	require.NoError(t, err)
	assert.Equal(t, PhaseAborted, ab.Phase)
	_, act = Decide(plan, ab, Observation{Now: at(7)})
	assert.True(t, act.Rollback)
	_, err = Apply(plan, ab, CommandPromote, at(8))
	require.ErrorIs(t, err, ErrDone)

	_, err = Apply(plan, st, Command("skip"), at(8))
	require.Error(t, err)
}

func TestSupersede(t *testing.T) {
	plan := mustPlan(t, "steps: [{proxies: 10%}, {proxies: 50%}]")
	old := Start(plan, nil, "old-candidate-hash", "stable", "", t0)
	old.Step = 1
	st := Start(plan, &old, "new-candidate", "stable", "def", at(5))
	assert.Equal(t, 0, st.Step, "a newer revision restarts from the first step")
	assert.Equal(t, "old-candidate-hash", st.Superseded)
	assert.Contains(t, st.Message, "superseded candidate old-candidat; restarted from step 1")

	done := old
	done.Phase = PhaseSucceeded
	st = Start(plan, &done, "new-candidate", "old-candidate-hash", "", at(5))
	assert.Empty(t, st.Superseded, "a finished rollout is not superseded")
}
