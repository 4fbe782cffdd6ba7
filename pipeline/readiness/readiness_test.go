package readiness

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
)

const src = "envoysource/team-a/config"

// served is a node whose newest revision from src, hash, is served.
func served(id, hash string) revisions.NodeStatus {
	return revisions.NodeStatus{
		NodeID: id, State: revisions.StateInSync, Published: &revisions.PublishedStatus{Hash: hash},
		History: []revisions.RevisionStatus{{Hash: hash, Source: src}},
	}
}

// pending is a node whose newest revision from src, want, is not served
// yet: hash is.
func pending(id, want, hash string) revisions.NodeStatus {
	n := served(id, hash)
	n.History = append([]revisions.RevisionStatus{{Hash: want, Source: src}}, n.History...)
	return n
}

// rolledBack is a node whose newest revision from src the proxies
// rejected with text; state is Rollback or RollbackFailed.
func rolledBack(id string, state revisions.State, text string) revisions.NodeStatus {
	n := pending(id, "bad", "good")
	n.State = state
	n.History[0].Tainted, n.History[0].Taint = true, &revisions.Taint{Message: text}
	return n
}

func waitingOn(id, msg string) revisions.NodeStatus {
	n := pending(id, "next", "good")
	n.Waiting = &revisions.WaitingStatus{Hash: "next", Message: msg}
	return n
}

func verdicts(nodes ...revisions.NodeStatus) []Verdict {
	out := make([]Verdict, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, VerdictOf(n, src))
	}
	return out
}

// The desired revision is the newest one from the source asking, whatever
// other sources put above it; it is in sync when it is the one served.
func TestVerdictOf(t *testing.T) {
	other := "envoyconfig/team-b/edge"
	node := revisions.NodeStatus{
		NodeID: "edge", State: revisions.StateInSync, Published: &revisions.PublishedStatus{Hash: "h2"},
		History: []revisions.RevisionStatus{
			{Hash: "h3", Source: other},
			{Hash: "h2", Source: src},
			{Hash: "h1", Source: src, Taint: &revisions.Taint{Message: "old rejection"}},
		},
	}
	for _, tc := range []struct {
		name      string
		node      revisions.NodeStatus
		source    string
		desired   string // "" for none
		inSync    bool
		rolled    bool
		rejection string
	}{
		{name: "newest of its own source", node: node, source: src, desired: "h2", inSync: true},
		{name: "another source's newest", node: node, source: other, desired: "h3"},
		{name: "no revision from the source", node: node, source: "envoysource/x/y"},
		{name: "nothing served", node: revisions.NodeStatus{NodeID: "edge", History: node.History[1:]}, source: src, desired: "h2"},
		{name: "desired rejected", node: rolledBack("edge", revisions.StateRollback, "bad cluster"), source: src, desired: "bad", rolled: true, rejection: "bad cluster"},
		{name: "all rejected", node: rolledBack("edge", revisions.StateRollbackFailed, "bad"), source: src, desired: "bad", rolled: true, rejection: "bad"},
		{name: "degraded is not rolled back", node: func() revisions.NodeStatus { n := served("edge", "h"); n.State = revisions.StateDegraded; return n }(), source: src, desired: "h", inSync: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := VerdictOf(tc.node, tc.source)
			if tc.desired == "" {
				assert.Nil(t, v.Desired)
			} else if assert.NotNil(t, v.Desired) {
				assert.Equal(t, tc.desired, v.Desired.Hash)
			}
			assert.Equal(t, tc.inSync, v.InSync(), "inSync")
			assert.Equal(t, tc.rolled, v.rolledBack(), "rolledBack")
			assert.Equal(t, tc.rejection, v.Rejection(), "rejection")
		})
	}
}

// cond is what a test expects of one condition.
type cond struct {
	status  metav1.ConditionStatus
	reason  string
	message string // a part of it; "" checks nothing
}

func (c cond) check(t *testing.T, what string, got metav1.Condition) {
	t.Helper()
	assert.Equal(t, c.status, got.Status, what)
	assert.Equal(t, c.reason, got.Reason, what)
	assert.Contains(t, got.Message, c.message, what)
	assert.Equal(t, int64(7), got.ObservedGeneration, what)
}

var (
	notStalled  = cond{status: metav1.ConditionFalse, reason: fluxmeta.SucceededReason}
	notBusy     = cond{status: metav1.ConditionFalse, reason: fluxmeta.SucceededReason}
	retrying    = cond{status: metav1.ConditionTrue, reason: fluxmeta.ProgressingWithRetryReason}
	progressing = cond{status: metav1.ConditionTrue, reason: fluxmeta.ProgressingReason, message: "the configuration is on its way to the xDS server"}
)

// The Ready, Reconciling and Stalled conditions of every outcome, and
// which outcome wins when several hold: a fetch error, then validation,
// conflicts, apply errors, rollbacks, waiting nodes, then readiness.
func TestOf(t *testing.T) {
	invalid := &pipeline.Status{Source: src, Invalid: true, DiagnosticCount: 1, Diagnostics: []render.Diagnostic{{Pos: render.Position{File: "edge.yaml", Line: 3}, Message: "unknown field"}}}
	conflict := &pipeline.Status{Source: src, Conflicts: []pipeline.Conflict{{Node: "edge", Owner: "envoyconfig/team-a/edge", Contender: src}}}
	applyErr := &pipeline.Status{Source: src, ApplyErrors: []pipeline.NodeError{{Node: "edge", Error: "store unavailable"}}}
	ok := &pipeline.Status{Source: src}
	for _, tc := range []struct {
		name                        string
		st                          *pipeline.Status
		fetchReason                 string
		fetchErr                    error
		nodes                       []revisions.NodeStatus
		ready, reconciling, stalled cond
	}{
		{
			name: "invalid spec stalls", fetchReason: ReasonInvalidSpec, fetchErr: errors.New("spec.path: must be relative"),
			ready: cond{metav1.ConditionFalse, ReasonInvalidSpec, "spec.path: must be relative"}, reconciling: notBusy,
			stalled: cond{metav1.ConditionTrue, ReasonInvalidSpec, "spec.path: must be relative"},
		},
		{
			name: "a failed fetch is retried", fetchReason: ReasonFetchFailed, fetchErr: errors.New("GitRepository team-a/envoy has no artifact yet"),
			nodes:       []revisions.NodeStatus{rolledBack("edge", revisions.StateRollback, "x")},
			ready:       cond{metav1.ConditionFalse, ReasonFetchFailed, "has no artifact yet"},
			reconciling: cond{metav1.ConditionTrue, fluxmeta.ProgressingWithRetryReason, "has no artifact yet"}, stalled: notStalled,
		},
		{
			name: "a digest mismatch is retried", fetchReason: ReasonDigestMismatch, fetchErr: errors.New("artifact digest mismatch"),
			ready: cond{metav1.ConditionFalse, ReasonDigestMismatch, "artifact digest mismatch"}, reconciling: retrying, stalled: notStalled,
		},
		{
			name: "validation stalls, before a rollback", st: invalid, nodes: []revisions.NodeStatus{rolledBack("edge", revisions.StateRollback, "x")},
			ready: cond{metav1.ConditionFalse, ReasonValidationFailed, "edge.yaml:3"}, reconciling: notBusy,
			stalled: cond{metav1.ConditionTrue, ReasonValidationFailed, "validation failed with 1 error(s)"},
		},
		{
			name: "a conflict stalls", st: conflict, nodes: []revisions.NodeStatus{served("edge", "h")},
			ready: cond{metav1.ConditionFalse, ReasonConflict, `node "edge" is already rendered by source "envoyconfig/team-a/edge"`}, reconciling: notBusy,
			stalled: cond{metav1.ConditionTrue, ReasonConflict, `node "edge"`},
		},
		{
			name: "an apply error is retried", st: applyErr, nodes: []revisions.NodeStatus{served("edge", "h")},
			ready:       cond{metav1.ConditionFalse, fluxmeta.FailedReason, `node "edge": store unavailable`},
			reconciling: cond{metav1.ConditionTrue, fluxmeta.ProgressingWithRetryReason, "store unavailable"}, stalled: notStalled,
		},
		{
			name: "a rollback stalls, before a waiting node", st: ok,
			nodes:   []revisions.NodeStatus{waitingOn("core", "secret missing"), served("api", "h"), rolledBack("edge", revisions.StateRollback, "rejected by 1 of 1 proxies; pod-a: unknown cluster")},
			ready:   cond{metav1.ConditionFalse, ReasonRollback, "the proxies rejected the newest revision: node edge: rejected by 1 of 1 proxies; pod-a: unknown cluster (Rollback)"},
			stalled: cond{metav1.ConditionTrue, ReasonRollback, "node edge"}, reconciling: notBusy,
		},
		{
			name: "any node whose rollback failed names the reason", st: ok,
			nodes:   []revisions.NodeStatus{rolledBack("a", revisions.StateRollback, "x"), rolledBack("b", revisions.StateRollbackFailed, "y"), rolledBack("c", revisions.StateRollback, "z")},
			ready:   cond{metav1.ConditionFalse, ReasonRollbackFailed, "node a: x (Rollback); node b: y (RollbackFailed); node c: z (Rollback)"},
			stalled: cond{metav1.ConditionTrue, ReasonRollbackFailed, ""}, reconciling: notBusy,
		},
		{
			name: "a waiting node is progress", st: ok, nodes: []revisions.NodeStatus{served("api", "h"), waitingOn("core", "secret team-a/cert does not exist")},
			ready:       cond{metav1.ConditionFalse, fluxmeta.DependencyNotReadyReason, "node core: secret team-a/cert does not exist"},
			reconciling: cond{metav1.ConditionTrue, fluxmeta.DependencyNotReadyReason, "node core"}, stalled: notStalled,
		},
		{
			name: "every node in sync is ready", st: ok, nodes: []revisions.NodeStatus{served("api", "h1"), served("edge", "h2")},
			ready:       cond{metav1.ConditionTrue, fluxmeta.SucceededReason, "revision h1 is served to node api (InSync); revision h2 is served to node edge (InSync)"},
			reconciling: notBusy, stalled: notStalled,
		},
		{
			name: "one node in sync of two is not ready", st: ok, nodes: []revisions.NodeStatus{served("api", "h1"), pending("edge", "h3", "h2")},
			ready: cond{metav1.ConditionFalse, fluxmeta.ProgressingReason, "on its way"}, reconciling: progressing, stalled: notStalled,
		},
		{
			name: "the node in sync listed last is not enough either", st: ok, nodes: []revisions.NodeStatus{pending("edge", "h3", "h2"), served("api", "h1")},
			ready: cond{metav1.ConditionFalse, fluxmeta.ProgressingReason, ""}, reconciling: progressing, stalled: notStalled,
		},
		{
			name: "no node in sync", st: ok, nodes: []revisions.NodeStatus{pending("edge", "h3", "h2")},
			ready: cond{metav1.ConditionFalse, fluxmeta.ProgressingReason, ""}, reconciling: progressing, stalled: notStalled,
		},
		{
			name: "a source that renders no node is ready", st: ok,
			ready: cond{metav1.ConditionTrue, fluxmeta.SucceededReason, "the source renders no node"}, reconciling: notBusy, stalled: notStalled,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Of(7, tc.st, tc.fetchReason, tc.fetchErr, verdicts(tc.nodes...))
			tc.ready.check(t, "Ready", r.ready)
			tc.reconciling.check(t, "Reconciling", r.reconciling)
			tc.stalled.check(t, "Stalled", r.stalled)
		})
	}
}

// Ready names at most five nodes, then counts the others.
func TestServedMessageNamesFiveNodes(t *testing.T) {
	var nodes []revisions.NodeStatus
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		nodes = append(nodes, served(id, "h-"+id))
	}
	five := servedMessage(verdicts(nodes...))
	assert.Equal(t, 5, strings.Count(five, "is served to node"))
	assert.NotContains(t, five, "more")
	assert.True(t, strings.HasPrefix(five, "revision h-a is served to node a (InSync); "))

	seven := servedMessage(verdicts(append(nodes, served("f", "h-f"), served("g", "h-g"))...))
	assert.Equal(t, 5, strings.Count(seven, "is served to node"))
	assert.True(t, strings.HasSuffix(seven, "node e (InSync); and 2 more"), seven)
}

// One event per change of the Ready condition's verdict, of the type its
// reason deserves; none for progress or for the same words again.
func TestEventOf(t *testing.T) {
	c := func(reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: "Ready", Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name     string
		was, now *metav1.Condition
		kind     string // "" for no event
		reason   string
	}{
		{name: "no condition", was: c(ReasonSucceeded, "m")},
		{name: "first verdict", now: c(ReasonSucceeded, "served"), kind: corev1.EventTypeNormal, reason: EventPublished},
		{name: "same words", was: c(ReasonSucceeded, "served"), now: c(ReasonSucceeded, "served")},
		{name: "new message", was: c(ReasonSucceeded, "served h1"), now: c(ReasonSucceeded, "served h2"), kind: corev1.EventTypeNormal, reason: EventPublished},
		{name: "new reason", was: c(ReasonRollback, "m"), now: c(ReasonRollbackFailed, "m"), kind: corev1.EventTypeWarning, reason: EventRolledBack},
		{name: "rejected", now: c(ReasonValidationFailed, "m"), kind: corev1.EventTypeWarning, reason: EventRejected},
		{name: "rolled back", now: c(ReasonRollback, "m"), kind: corev1.EventTypeWarning, reason: EventRolledBack},
		{name: "conflict", now: c(ReasonConflict, "m"), kind: corev1.EventTypeWarning, reason: EventConflict},
		{name: "fetch failed", now: c(ReasonFetchFailed, "m"), kind: corev1.EventTypeWarning, reason: EventFailed},
		{name: "digest mismatch", now: c(ReasonDigestMismatch, "m"), kind: corev1.EventTypeWarning, reason: EventFailed},
		{name: "invalid spec", now: c(ReasonInvalidSpec, "m"), kind: corev1.EventTypeWarning, reason: EventFailed},
		{name: "apply failed", now: c(fluxmeta.FailedReason, "m"), kind: corev1.EventTypeWarning, reason: EventFailed},
		{name: "progress", was: c(ReasonSucceeded, "m"), now: c(fluxmeta.ProgressingReason, "on its way")},
		{name: "waiting", now: c(fluxmeta.DependencyNotReadyReason, "secret missing")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, reason, note, ok := EventOf(tc.was, tc.now)
			assert.Equal(t, tc.kind != "", ok)
			assert.Equal(t, tc.kind, kind)
			assert.Equal(t, tc.reason, reason)
			if ok {
				assert.Equal(t, tc.now.Message, note)
			} else {
				assert.Empty(t, note)
			}
		})
	}
	_, _, note, ok := EventOf(nil, c(ReasonRollback, strings.Repeat("x", 2*maxEventNote)))
	require.True(t, ok)
	assert.Len(t, note, maxEventNote, "an event's note is bounded")
	assert.True(t, strings.HasSuffix(note, "…(cut)"))
}

// bounded keeps what fits, cuts what does not on a rune boundary, and
// never panics on bytes that are not UTF-8.
func TestBounded(t *testing.T) {
	const more = " …(cut)"
	for _, tc := range []struct {
		name, s string
		n       int
		want    string
	}{
		{name: "fits", s: strings.Repeat("a", 20), n: 20, want: strings.Repeat("a", 20)},
		{name: "one byte over", s: strings.Repeat("a", 21), n: 20, want: strings.Repeat("a", 20-len(more)) + more},
		{name: "rune boundary", s: "ab" + strings.Repeat("é", 10), n: 12, want: "ab" + more},
		{name: "nothing left", s: strings.Repeat("é", 10), n: len(more) + 1, want: more},
		{name: "not UTF-8", s: strings.Repeat("\x80", 40), n: 20, want: more},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Bounded(tc.s, tc.n))
		})
	}
}

// A source whose many nodes all fail still gets a status the API server
// takes: every message is cut to a bound, on a rune boundary, and says so.
func TestStatusTextsAreBounded(t *testing.T) {
	var verdicts []Verdict
	for i := range 2000 {
		node := revisions.NodeStatus{NodeID: fmt.Sprintf("node-%04d", i), State: revisions.StateRollback}
		node.History = []revisions.RevisionStatus{{Hash: "h", Source: "envoysource/a/b", Taint: &revisions.Taint{Message: "rejected by 1 of 1 proxies; pod: élan " + strings.Repeat("x", 200)}}}
		verdicts = append(verdicts, VerdictOf(node, "envoysource/a/b"))
	}
	var conds []metav1.Condition
	Of(1, &pipeline.Status{}, "", nil, verdicts).Set(&conds)
	for _, c := range conds {
		assert.LessOrEqual(t, len(c.Message), MaxConditionMessage, c.Type)
		assert.True(t, utf8.ValidString(c.Message), c.Type)
	}
	ready := meta.FindStatusCondition(conds, "Ready")
	require.NotNil(t, ready)
	assert.Equal(t, ReasonRollback, ready.Reason)
	assert.True(t, strings.HasSuffix(ready.Message, "…(cut)"))
	assert.Equal(t, "ab …(cut)", Bounded("ab"+strings.Repeat("é", 10), 12), "cut before a rune, not through it")
}

// A rejected render lists its first diagnostics, each with its file from
// the repository root, then how many more there are.
func TestDiagnostics(t *testing.T) {
	st := pipeline.Status{Invalid: true, DiagnosticCount: 12}
	for i := range 12 {
		st.Diagnostics = append(st.Diagnostics, render.Diagnostic{Pos: render.Position{File: fmt.Sprintf("n%02d.yaml", i), Line: 1}, Message: "bad"})
	}
	got := Diagnostics(st, "envoy")
	require.Len(t, got, maxDiagnostics+1)
	assert.Contains(t, got[0], "envoy/n00.yaml:1")
	assert.Equal(t, "and 2 more", got[maxDiagnostics])
	assert.Empty(t, Diagnostics(pipeline.Status{}, "envoy"), "a clean render lists nothing")
}
