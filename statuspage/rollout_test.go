package statuspage

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/forge"
	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/rollout"
)

func at(now time.Time, d time.Duration) *time.Time { t := now.Add(d); return &t }

// rolloutFixture: edge-1 waits for its canaries' ACKs at step 1/5,
// edge-2 waits for promote, edge-3 failed on a canary's NACK whose text is
// hostile (markup, a terminal escape, far too long).
func rolloutFixture(now time.Time) []revisions.RolloutView {
	nack := "<script>alert(1)</script>\x1b[31m route \"api\": unknown cluster " + strings.Repeat("x", 4000)
	return []revisions.RolloutView{
		{
			Node: "edge-1", Source: "cfg", Step: "step 1/5 (10% of proxies)", OnCandidate: 10, OnStable: 90, Acked: 7, NextGate: "ack",
			Deadline: at(now, 18*time.Second),
			Status: rollout.Status{
				Candidate: "cccccccccccccccc", Stable: "ssssssssssssssss", Commit: "2222222222222222222222222222222222222222",
				Steps: 5, Phase: rollout.PhaseProgressing, Share: 1000, Superseded: "oooooooooooooooo",
			},
		},
		{
			Node: "edge-2", Source: "cfg", Step: "step 5/5 (pause until promoted)", OnCandidate: 5, OnStable: 5, NextGate: "promote",
			Status: rollout.Status{Candidate: "cccccccccccccccc", Stable: "ssssssssssssssss", Step: 4, Steps: 5, Phase: rollout.PhasePaused, Share: 5000},
		},
		{
			Node: "edge-3", Source: "cfg", Step: "step 1/5 (10% of proxies)", OnStable: 20,
			Status: rollout.Status{
				Candidate: "cccccccccccccccc", Stable: "ssssssssssssssss", Steps: 5, Phase: rollout.PhaseFailed,
				Failure: &rollout.Failure{Step: 1, Describe: "10% of proxies", Proxy: "edge-7f9c", Message: "rejected the candidate: " + nack},
			},
		},
	}
}

func TestStatusPageShowsEachRollout(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	nodes, srcs := rollbackFixture(now)
	nodes[0].NodeID, nodes[0].State = "edge-1", nodestate.Progressing
	var b strings.Builder
	require.NoError(t, Page{Nodes: nodes, Sources: srcs, Rollouts: rolloutFixture(now), Forges: map[string]forge.Provider{"cfg": forge.ProviderGitea}, Now: now}.Write(&b))
	page := b.String()
	for _, want := range []string{
		`<h2 id="rollouts">Rollouts</h2>`,
		`<td data-label="step" class="step"><span>step 1/5 (10% of proxies)<br><span class="small muted">superseded <code>oooooooooooo</code>, restarted at step 1</span>`,
		`<td data-label="proxies" class="side"><span>10 on the new revision, 90 on the old</span>`,
		`<td data-label="waits for" class="wait"><span>ACKs 7/10, 18s left</span>`,
		`<span>paused: waiting for `,
		`revision <code>cccccccccccc</code> over <code>ssssssssssss</code>, commit <a class="mono" href="https://gitea.example/org/envoy-config/commit/2222222222222222222222222222222222222222"`,
		`failed: step 1/5 (10% of proxies): proxy edge-7f9c rejected the candidate: &lt;script&gt;alert(1)&lt;/script&gt;`,
		`<dt>rollout</dt><dd class="rollout"><a href="#rollouts">step 1/5 (10% of proxies); 10 on the new revision, 90 on the old; ACKs 7/10, 18s left</a></dd>`,
		`<a href="api/v1/rollouts">rollouts JSON</a>`,
	} {
		assert.Contains(t, page, want)
	}
	assert.NotContains(t, page, "<script>alert", "the proxy's text is escaped")
	assert.NotContains(t, page, "\x1b", "no terminal escape reaches the page")
	assert.NotContains(t, page, strings.Repeat("x", maxRolloutText), "the proxy's text is bounded")
	// Those that need a person first: the failed one, then the paused one.
	i3, i2, i1 := strings.Index(page, `data-rollout="edge-3"`), strings.Index(page, `data-rollout="edge-2"`), strings.Index(page, `data-rollout="edge-1"`)
	assert.True(t, i3 < i2 && i2 < i1, "failed, paused, progressing: %d %d %d", i3, i2, i1)
}

func TestStatusPageWithoutRollouts(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	nodes, srcs := rollbackFixture(now)
	var b strings.Builder
	require.NoError(t, Page{Nodes: nodes, Sources: srcs, Now: now}.Write(&b))
	assert.NotContains(t, b.String(), "Rollouts")
	assert.NotContains(t, b.String(), "<dt>rollout</dt>")
}

func TestStatusPageBoundsTheRollouts(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	var views []revisions.RolloutView
	for i := range maxShownRollouts + 7 {
		views = append(views, revisions.RolloutView{Node: "n" + string(rune('a'+i%26)) + strings.Repeat("z", i/26), Status: rollout.Status{Phase: rollout.PhaseSucceeded, Steps: 2}})
	}
	var b strings.Builder
	require.NoError(t, Page{Rollouts: views, Now: now}.Write(&b))
	assert.Equal(t, maxShownRollouts, strings.Count(b.String(), "data-rollout="))
	assert.Contains(t, b.String(), "and 7 more")
}

func TestRolloutWaitSaysWhy(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	base := func(phase rollout.Phase, gate string) revisions.RolloutView {
		return revisions.RolloutView{
			Node: "edge", Step: "step 2/5 (10% of proxies)", NextGate: gate, OnCandidate: 10, Acked: 10,
			Status: rollout.Status{Steps: 5, Step: 1, Phase: phase},
		}
	}
	soak := base(rollout.PhaseProgressing, "soak")
	soak.Deadline = at(now, 12*time.Second)
	analysis := base(rollout.PhaseProgressing, "analysis")
	analysis.Status.Gates = []rollout.GateResult{{Gate: rollout.GateAnalysis, Passed: true, Message: "2 of 3 measurements passed"}}
	userPaused := base(rollout.PhaseProgressing, "promote")
	userPaused.Status.UserPaused = true
	inconclusive := base(rollout.PhasePaused, "promote")
	inconclusive.Status.Gates = []rollout.GateResult{{Gate: rollout.GateAnalysis, Message: "inconclusive: not enough traffic"}}
	inconclusive.Status.Message = "analysis of step 2/5 (10% of proxies) was inconclusive (not enough traffic); promote or abort"
	timedPause := base(rollout.PhaseProgressing, "pause")
	timedPause.Deadline = at(now, 90*time.Second)
	overdue := base(rollout.PhaseProgressing, "ack")
	overdue.Acked, overdue.Deadline = 3, at(now, -time.Second)
	heldFailure := base(rollout.PhasePaused, "promote")
	heldFailure.Status.Failure = &rollout.Failure{Step: 2, Describe: "10% of proxies", Message: "analysis failed: error rate 3%"}
	aborted := base(rollout.PhaseAborted, "")
	aborted.Status.Message = "aborted by a person; rolled back"
	for name, c := range map[string]struct {
		v    revisions.RolloutView
		want string
	}{
		"soak":          {soak, "soak, 12s left: no NACK and no proxy restarting more than allowed"},
		"analysis":      {analysis, "analysis running (last: 2 of 3 measurements passed)"},
		"user paused":   {userPaused, "paused by a person: waiting for `legate rollout resume` or `promote`"},
		"inconclusive":  {inconclusive, "paused: the analysis was inconclusive, waiting for `legate rollout promote` or `abort`: analysis of step 2/5 (10% of proxies) was inconclusive (not enough traffic); promote or abort"},
		"timed pause":   {timedPause, "pause, 1m30s left"},
		"overdue ACKs":  {overdue, "ACKs 3/10, 0s left"},
		"held failure":  {heldFailure, "paused after a failure, waiting for `legate rollout promote` or `abort`: step 2/5 (10% of proxies): analysis failed: error rate 3%"},
		"aborted":       {aborted, "aborted: aborted by a person; rolled back"},
		"untimed pause": {base(rollout.PhasePaused, "promote"), "paused: waiting for `legate rollout promote`"},
		"succeeded":     {base(rollout.PhaseSucceeded, ""), "done: promoted to every proxy"},
	} {
		assert.Equal(t, c.want, RolloutWait(c.v, now), name)
	}
}

func TestCleanTextBoundsAndFlattens(t *testing.T) {
	assert.Equal(t, "a  b", CleanText("a\x1b\nb"))
	long := CleanText(strings.Repeat("é", 1000))
	assert.LessOrEqual(t, len(long), maxRolloutText)
	assert.True(t, strings.HasSuffix(long, "…"))
}
