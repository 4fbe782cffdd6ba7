package revisions_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
)

func plan(t *testing.T, doc string) *rollout.Plan {
	t.Helper()
	var p rollout.Policy
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &p))
	pl, err := p.Compile("")
	require.NoError(t, err)
	return pl
}

func rolloutOpts(pl *rollout.Plan) revisions.Options {
	return revisions.Options{Rollouts: func(source string) *rollout.Plan {
		if source == "config" {
			return pl
		}
		return nil
	}}
}

// Three proxies: p-canary in a 10% step, p-half in a 50% one, p-rest in
// neither.
func connectBucketed(h *harness) {
	h.events(
		revisions.ProxyEvent{Kind: revisions.ProxyConnected, Proxy: "p-canary", Bucket: 500},
		revisions.ProxyEvent{Kind: revisions.ProxyConnected, Proxy: "p-half", Bucket: 3000},
		revisions.ProxyEvent{Kind: revisions.ProxyConnected, Proxy: "p-rest", Bucket: 8000},
	)
}

// startRollout publishes v1 to every proxy, then applies v2 under the plan.
func startRollout(t *testing.T, doc string) (*harness, revisions.Publication, revisions.Publication) {
	h := newHarness(t, rolloutOpts(plan(t, doc)))
	connectBucketed(h)
	h.apply(config("l1", "c1"), "c1")
	stable := h.pub.last(t)
	require.Nil(t, stable.Candidate, "the first revision has nothing to roll out over")
	h.events(ack("p-canary", stable), ack("p-half", stable), ack("p-rest", stable))
	require.Equal(t, revisions.StateInSync, h.status().State)
	h.apply(config("l2", "c2"), "c2")
	split := h.pub.last(t)
	require.NotNil(t, split.Candidate, "new content under a plan is served as a split")
	require.Equal(t, stable.Version, split.Version, "the stable side keeps its versions")
	return h, stable, *split.Candidate
}

func TestRolloutStepsThenPromotion(t *testing.T) {
	h, stable, cand := startRollout(t, "steps: [{proxies: 10%}, {proxies: 50%}]")
	assert.Equal(t, 1000, h.pub.last(t).CandidateShare)
	assert.Equal(t, revisions.StateProgressing, h.status().State)
	assert.Equal(t, "pending:c2", h.outcomeStatuses()[len(h.outcomeStatuses())-1])
	assert.Equal(t, "rolling out, step 1/2 (10% of proxies)", h.lastOutcome().Description)
	assert.True(t, h.lastOutcome().Rollout, "a reporter says a rollout's text as it is")
	assert.NotEqual(t, stable.Types[ldsType].Version, cand.Types[ldsType].Version, "the changed type has a version of its own")

	v, ok := h.e.Rollout(node)
	require.True(t, ok)
	assert.Equal(t, 1, v.OnCandidate)
	assert.Equal(t, 2, v.OnStable)
	assert.Equal(t, "ack", v.NextGate)

	// The canary ACKs: the next step's proxies are served at once.
	h.events(ack("p-canary", cand))
	assert.Equal(t, 5000, h.pub.last(t).CandidateShare)
	assert.Equal(t, "rolling out, step 2/2 (50% of proxies)", h.lastOutcome().Description)
	h.events(ack("p-half", cand))
	last := h.pub.last(t)
	require.Nil(t, last.Candidate, "every step passed: the candidate alone is served")
	assert.Equal(t, cand.Version, last.Version, "under the versions the canaries have")
	assert.Equal(t, "pending:c2", h.outcomeStatuses()[len(h.outcomeStatuses())-1], "success waits for the last proxy")
	h.events(ack("p-rest", last))
	assert.Equal(t, "success:c2", h.outcomeStatuses()[len(h.outcomeStatuses())-1])
	assert.Equal(t, revisions.StateInSync, h.status().State)
	v, _ = h.e.Rollout(node)
	assert.Equal(t, rollout.PhaseSucceeded, v.Status.Phase)
	assert.InDelta(t, 1, h.metric("legate_revisions_rollouts_total"), 0)
	assert.InDelta(t, 2, h.metric("legate_revisions_rollout_steps_total"), 0)
}

func TestRolloutCanaryNACKRollsBackTheCanariesOnly(t *testing.T) {
	h, stable, cand := startRollout(t, "steps: [{proxies: 10%}, {proxies: 50%}]")
	before := h.pub.count()
	h.events(nack("p-canary", cand, "cluster c2: unknown field"))
	require.Greater(t, h.pub.count(), before)
	last := h.pub.last(t)
	assert.Nil(t, last.Candidate, "the canaries are put back on the stable revision")
	assert.Equal(t, stable.Version, last.Version)
	o := h.lastOutcome()
	assert.Equal(t, revisions.OutcomeFailure, o.Status)
	assert.Equal(t, "c2", o.Origin.Commit)
	assert.Contains(t, o.Description, "step 1/2 (10% of proxies)")
	assert.Contains(t, o.Description, "proxy p-canary rejected the candidate: cluster c2: unknown field")
	assert.True(t, o.Rollout)
	s := h.status()
	assert.True(t, s.History[0].Tainted, "the candidate is tainted")
	assert.Equal(t, revisions.StateRollback, s.State)
	for _, p := range h.pub.pubs {
		if p.Candidate != nil {
			assert.Equal(t, 1000, p.CandidateShare, "p-rest (bucket 8000) was never in the share")
		}
	}
	// A later apply of the same content does not roll it out again.
	n := h.pub.count()
	h.apply(config("l2", "c2"), "c2")
	assert.Equal(t, n, h.pub.count())
}

func TestRolloutOnFailurePauseKeepsTheCanaries(t *testing.T) {
	h, _, cand := startRollout(t, "steps: [{proxies: 10%}]\nonFailure: pause")
	h.events(nack("p-canary", cand, "bad"))
	assert.NotNil(t, h.pub.last(t).Candidate, "onFailure: pause keeps the split")
	v, _ := h.e.Rollout(node)
	assert.Equal(t, rollout.PhasePaused, v.Status.Phase)
	assert.Equal(t, revisions.OutcomeFailure, h.lastOutcome().Status)
	_, err := h.e.RolloutCommand(context.Background(), node, rollout.CommandAbort)
	require.NoError(t, err)
	assert.Nil(t, h.pub.last(t).Candidate)
	assert.True(t, h.status().History[0].Tainted)
}

func TestRolloutSupersededByANewerCommit(t *testing.T) {
	h, _, cand := startRollout(t, "steps: [{proxies: 10%}, {proxies: 50%}]")
	h.events(ack("p-canary", cand))
	require.Equal(t, 5000, h.pub.last(t).CandidateShare)
	h.apply(config("l3", "c3"), "c3")
	last := h.pub.last(t)
	require.NotNil(t, last.Candidate)
	assert.NotEqual(t, cand.Version, last.Candidate.Version)
	assert.Equal(t, 1000, last.CandidateShare, "the newest revision starts from step 1")
	v, _ := h.e.Rollout(node)
	assert.Equal(t, 0, v.Status.Step)
	assert.Equal(t, h.status().History[1].Hash, v.Status.Superseded)
	assert.Contains(t, h.lastOutcome().Description, "rolling out, step 1/2 (10% of proxies); superseded")
	for _, p := range h.pub.pubs {
		if p.Candidate == nil {
			assert.NotEqual(t, cand.Version, p.Version, "the superseded candidate is never promoted")
		}
	}
}

func TestRolloutContinuesAfterARestart(t *testing.T) {
	pl := plan(t, "steps: [{proxies: 10%}, {proxies: 50%}, {pause: {}}]")
	h, _, cand := startRollout(t, "steps: [{proxies: 10%}, {proxies: 50%}, {pause: {}}]")
	h.events(ack("p-canary", cand))
	require.Equal(t, 5000, h.pub.last(t).CandidateShare)

	h.restart(rolloutOpts(pl))
	last := h.pub.last(t)
	require.NotNil(t, last.Candidate, "the restarted engine serves the split again")
	assert.Equal(t, 5000, last.CandidateShare, "at the step it was")
	v, ok := h.e.Rollout(node)
	require.True(t, ok)
	assert.Equal(t, 1, v.Status.Step)
	assert.Equal(t, rollout.PhaseProgressing, v.Status.Phase)

	// The proxies come back and answer the new versions.
	connectBucketed(h)
	h.events(ack("p-canary", *last.Candidate), ack("p-half", *last.Candidate))
	v, _ = h.e.Rollout(node)
	assert.Equal(t, rollout.PhasePaused, v.Status.Phase, "at the untimed pause")
	assert.Equal(t, "promote", v.NextGate)
	_, err := h.e.RolloutCommand(context.Background(), node, rollout.CommandPromote)
	require.NoError(t, err)
	assert.Nil(t, h.pub.last(t).Candidate)
	assert.Equal(t, last.Candidate.Version, h.pub.last(t).Version)
}

func TestRolloutTimedPauseAndAckTimeout(t *testing.T) {
	h, _, cand := startRollout(t, "steps: [{proxies: 10%}, {pause: 30s}, {proxies: 50%}]\nackTimeout: 10s")
	h.events(ack("p-canary", cand))
	h.e.Tick(context.Background(), h.clock.Step(29*time.Second))
	assert.Equal(t, 1000, h.pub.last(t).CandidateShare, "still pausing")
	h.e.Tick(context.Background(), h.clock.Step(time.Second))
	assert.Equal(t, 5000, h.pub.last(t).CandidateShare)
	// p-half never answers.
	h.e.Tick(context.Background(), h.clock.Step(10*time.Second))
	assert.Nil(t, h.pub.last(t).Candidate)
	assert.Contains(t, h.lastOutcome().Description, "proxy p-half did not ACK the candidate within 10s")
}

func TestRolloutRestartsFailTheStep(t *testing.T) {
	h, _, cand := startRollout(t, "steps: [{proxies: 10%}]\nsoak: 1m\nmaxRestarts: 1")
	h.events(ack("p-canary", cand))
	for range 2 {
		h.events(revisions.ProxyEvent{Kind: revisions.ProxyDisconnected, Proxy: "p-canary"},
			revisions.ProxyEvent{Kind: revisions.ProxyConnected, Proxy: "p-canary", Bucket: 500})
	}
	assert.Nil(t, h.pub.last(t).Candidate)
	assert.Contains(t, h.lastOutcome().Description, "proxy p-canary reconnected 2 times during the step (maxRestarts 1)")
}

func TestRolloutAnalysisFailureRollsBack(t *testing.T) {
	var subjects []rollout.Subject
	opts := rolloutOpts(plan(t, "steps: [{proxies: 10%}]\nanalysis: {}"))
	opts.Analyzer = rollout.AnalyzerFunc(func(_ context.Context, s rollout.Subject) (rollout.Verdict, string, error) {
		subjects = append(subjects, s)
		return rollout.VerdictFail, "error rate 12% > 5%", nil
	})
	h := newHarness(t, opts)
	connectBucketed(h)
	h.apply(config("l1", "c1"), "c1")
	stable := h.pub.last(t)
	h.events(ack("p-canary", stable), ack("p-half", stable), ack("p-rest", stable))
	h.apply(config("l2", "c2"), "c2")
	h.events(ack("p-canary", *h.pub.last(t).Candidate))
	require.Eventually(t, func() bool {
		h.events()
		return h.pub.last(t).Candidate == nil
	}, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, h.lastOutcome().Description, "analysis failed: error rate 12% > 5%")
	require.Len(t, subjects, 1)
	assert.Equal(t, rollout.Subject{Node: node, Source: "config", Revision: h.status().History[0].Hash, Commit: "c2", Step: 1, Steps: 1}, subjects[0])
}

func TestNoPolicyPublishesAtOnce(t *testing.T) {
	h := newHarness(t, rolloutOpts(nil))
	connectBucketed(h)
	h.apply(config("l1", "c1"), "c1")
	h.apply(config("l2", "c2"), "c2")
	assert.Nil(t, h.pub.last(t).Candidate)
	_, ok := h.e.Rollout(node)
	assert.False(t, ok)
	_, err := h.e.RolloutCommand(context.Background(), node, rollout.CommandPromote)
	require.ErrorIs(t, err, revisions.ErrNotFound)
	assert.Contains(t, err.Error(), `node "edge" has no rollout`)
}

// A home learns of each move of a rollout (SubscribeRollouts) without
// polling: a gate passing, a command, the end; not each ACK alone.
func TestRolloutMovesAreTold(t *testing.T) {
	h, _, cand := startRollout(t, "steps: [{proxies: 10%}, {proxies: 50%}, {pause: {}}]")
	var mu sync.Mutex
	var moves []revisions.RolloutMove
	h.e.SubscribeRollouts(func(m revisions.RolloutMove) {
		_, _ = h.e.Rollout(m.Node) // subscribers may read the engine
		mu.Lock()
		defer mu.Unlock()
		moves = append(moves, m)
	})
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(moves)
	}
	h.events(ack("p-rest", cand))
	assert.Zero(t, count(), "an answer of a proxy outside the step moves nothing")
	h.events(ack("p-canary", cand))
	require.Positive(t, count(), "the step's gate passed: the rollout moved to step 2")
	mu.Lock()
	assert.Equal(t, revisions.RolloutMove{Node: node, Source: "config"}, moves[0])
	mu.Unlock()
	n := count()
	h.events(ack("p-half", cand))
	require.Greater(t, count(), n, "step 2 passed: the rollout waits at its pause")
	n = count()
	_, err := h.e.RolloutCommand(context.Background(), node, rollout.CommandPromote)
	require.NoError(t, err)
	assert.Greater(t, count(), n, "a command moves it")
}
