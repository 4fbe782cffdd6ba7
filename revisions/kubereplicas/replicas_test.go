package kubereplicas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/legate-dev/legate/revisions"
)

var t0 = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// summary is a replica's summary ConfigMap's data as write stores it.
func summary(t *testing.T, replica string, at time.Time, nodes map[string]revisions.RemoteAnswers) map[string]string {
	t.Helper()
	data, err := encodeAnswers(nodes)
	require.NoError(t, err)
	return map[string]string{replicaKey: replica, atKey: at.UTC().Format(time.RFC3339Nano), answersKey: data}
}

func newTestReplicas(clk *clocktesting.FakeClock) *Replicas {
	return &Replicas{self: "replica-a", clock: clk, heard: map[string]heardFrom{}}
}

var (
	edgeAnswers = revisions.RemoteAnswers{
		Version: "v7", Population: 5, Accepted: 3, Rejected: 2,
		Rejections: []revisions.ProxyRejection{{Proxy: "pod-1", Error: "unknown cluster"}, {Proxy: "pod-2", Error: "bad route"}},
	}
	coreAnswers = revisions.RemoteAnswers{Version: "v3", Population: 1, Accepted: 1}
)

// A summary is read with each field where it was written: the wire form
// is pinned, since replicas of two versions meet during an upgrade.
func TestSummaryDecodesEveryField(t *testing.T) {
	wire := `{"core":{"version":"v3","population":1,"accepted":1},` +
		`"edge":{"version":"v7","population":5,"accepted":3,"rejected":2,"rejections":[{"proxy":"pod-1","error":"unknown cluster"},{"proxy":"pod-2","error":"bad route"}]}}`
	encoded, err := encodeAnswers(map[string]revisions.RemoteAnswers{"edge": edgeAnswers, "core": coreAnswers})
	require.NoError(t, err)
	assert.JSONEq(t, wire, encoded)

	h, err := decodeSummary(map[string]string{replicaKey: "replica-b", atKey: t0.Format(time.RFC3339Nano), answersKey: wire}, t0)
	require.NoError(t, err)
	assert.Equal(t, t0, h.at)
	assert.Equal(t, map[string]revisions.RemoteAnswers{"edge": edgeAnswers, "core": coreAnswers}, h.nodes)
}

// The owner's guests travel apart from its own proxies, and a summary from
// a replica of a version before them reads as the owner's alone.
func TestSummaryCarriesGuests(t *testing.T) {
	shared := revisions.RemoteAnswers{
		Version: "v2", Population: 1, Accepted: 1, GuestPopulation: 2, GuestAccepted: 1, GuestRejected: 1,
		Rejections: []revisions.ProxyRejection{{Proxy: "team-a/pod-1", Error: "forged", Guest: true}},
	}
	wire := `{"gw":{"version":"v2","population":1,"accepted":1,"guestPopulation":2,"guestAccepted":1,"guestRejected":1,` +
		`"rejections":[{"proxy":"team-a/pod-1","error":"forged","guest":true}]}}`
	encoded, err := encodeAnswers(map[string]revisions.RemoteAnswers{"gw": shared})
	require.NoError(t, err)
	assert.JSONEq(t, wire, encoded)

	h, err := decodeSummary(map[string]string{replicaKey: "replica-b", atKey: t0.Format(time.RFC3339Nano), answersKey: wire}, t0)
	require.NoError(t, err)
	assert.Equal(t, shared, h.nodes["gw"])
}

// A summary counts for answersStale after it was written, not a moment
// longer; one that cannot be read counts no node.
func TestSummaryStaleness(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	nodes := map[string]revisions.RemoteAnswers{"edge": edgeAnswers}
	for _, tc := range []struct {
		name    string
		data    map[string]string
		after   time.Duration // the clock's step before reading
		counted bool
		err     string
	}{
		{name: "fresh", data: summary(t, "b", t0, nodes), counted: true},
		{name: "a heartbeat old", data: summary(t, "b", t0, nodes), after: answersHeartbeat, counted: true},
		{name: "at the bound", data: summary(t, "b", t0, nodes), after: answersStale, counted: true},
		{name: "past the bound", data: summary(t, "b", t0, nodes), after: answersStale + time.Nanosecond},
		{name: "long gone", data: summary(t, "b", t0, nodes), after: 24 * time.Hour},
		{name: "written ahead of this clock", data: summary(t, "b", t0.Add(time.Minute), nodes), counted: true},
		{name: "no time", data: map[string]string{replicaKey: "b", answersKey: summary(t, "b", t0, nodes)[answersKey]}},
		{name: "not JSON", data: map[string]string{replicaKey: "b", atKey: t0.Format(time.RFC3339Nano), answersKey: "{"}, err: "unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk.SetTime(t0)
			clk.Step(tc.after)
			h, err := decodeSummary(tc.data, clk.Now())
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
			if tc.counted {
				assert.Equal(t, nodes, h.nodes)
			} else {
				assert.Empty(t, h.nodes)
			}
		})
	}
}

// What the engine is told as summaries come and go: a changed node's
// answers, the withdrawal of a node no longer listed, nothing for what
// it was told already.
func TestAnswerChanges(t *testing.T) {
	edge2 := edgeAnswers
	edge2.Accepted, edge2.Rejected = 4, 1
	none := revisions.RemoteAnswers{}
	for _, tc := range []struct {
		name      string
		prev, cur map[string]revisions.RemoteAnswers
		want      map[string]revisions.RemoteAnswers
	}{
		{name: "first", cur: map[string]revisions.RemoteAnswers{"edge": edgeAnswers}, want: map[string]revisions.RemoteAnswers{"edge": edgeAnswers}},
		{name: "unchanged", prev: map[string]revisions.RemoteAnswers{"edge": edgeAnswers}, cur: map[string]revisions.RemoteAnswers{"edge": edgeAnswers}, want: map[string]revisions.RemoteAnswers{}},
		{name: "changed", prev: map[string]revisions.RemoteAnswers{"edge": edgeAnswers}, cur: map[string]revisions.RemoteAnswers{"edge": edge2}, want: map[string]revisions.RemoteAnswers{"edge": edge2}},
		{
			name: "one added, one gone", prev: map[string]revisions.RemoteAnswers{"edge": edgeAnswers}, cur: map[string]revisions.RemoteAnswers{"core": coreAnswers},
			want: map[string]revisions.RemoteAnswers{"core": coreAnswers, "edge": none},
		},
		{name: "all gone", prev: map[string]revisions.RemoteAnswers{"edge": edgeAnswers, "core": coreAnswers}, want: map[string]revisions.RemoteAnswers{"edge": none, "core": none}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, answerChanges(tc.prev, tc.cur))
		})
	}
}

// The leader's view of another replica over time, on a fake clock: its
// summaries replace each other, its own and nameless ones are skipped,
// one that stops being rewritten is withdrawn by the sweep once, and a
// stale or unreadable one withdraws what was counted.
func TestHeardSummariesOverTime(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r := newTestReplicas(clk)
	both := map[string]revisions.RemoteAnswers{"edge": edgeAnswers, "core": coreAnswers}

	replica, changes, err := r.hear(summary(t, "replica-b", clk.Now(), both), clk.Now())
	require.NoError(t, err)
	assert.Equal(t, "replica-b", replica)
	assert.Equal(t, both, changes)

	// A heartbeat: the same answers, rewritten later.
	clk.Step(answersHeartbeat)
	_, changes, err = r.hear(summary(t, "replica-b", clk.Now(), both), clk.Now())
	require.NoError(t, err)
	assert.Empty(t, changes, "told already")

	// Its own summary, and one that names no replica, change nothing.
	for _, data := range []map[string]string{summary(t, "replica-a", clk.Now(), nil), summary(t, "", clk.Now(), both)} {
		_, changes, err = r.hear(data, clk.Now())
		require.NoError(t, err)
		assert.Nil(t, changes)
	}
	assert.Equal(t, []string{"replica-b"}, keys(r.heard))

	// Not stale yet at the bound; withdrawn past it, once.
	clk.Step(answersStale)
	assert.Empty(t, r.expire(clk.Now()))
	clk.Step(time.Nanosecond)
	assert.Equal(t, map[string]map[string]revisions.RemoteAnswers{"replica-b": {"edge": {}, "core": {}}}, r.expire(clk.Now()))
	assert.Empty(t, r.expire(clk.Now()), "withdrawn already")

	// It comes back; then its summary is read late (a cache resync after a
	// partition): what was counted is withdrawn.
	written := clk.Now()
	_, changes, err = r.hear(summary(t, "replica-b", written, both), clk.Now())
	require.NoError(t, err)
	assert.Equal(t, both, changes)
	clk.Step(answersStale + time.Second)
	_, changes, err = r.hear(summary(t, "replica-b", written, both), clk.Now())
	require.NoError(t, err)
	assert.Equal(t, map[string]revisions.RemoteAnswers{"edge": {}, "core": {}}, changes)

	// A summary that cannot be read withdraws the nodes too.
	_, changes, err = r.hear(summary(t, "replica-b", clk.Now(), both), clk.Now())
	require.NoError(t, err)
	require.Len(t, changes, 2)
	_, changes, err = r.hear(map[string]string{replicaKey: "replica-b", atKey: clk.Now().Format(time.RFC3339Nano), answersKey: "not json"}, clk.Now())
	require.Error(t, err)
	assert.Equal(t, map[string]revisions.RemoteAnswers{"edge": {}, "core": {}}, changes)
}

// The sweep withdraws only the replicas that stopped writing.
func TestExpireKeepsLiveReplicas(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r := newTestReplicas(clk)
	edge := map[string]revisions.RemoteAnswers{"edge": edgeAnswers}
	_, _, err := r.hear(summary(t, "replica-b", clk.Now(), edge), clk.Now())
	require.NoError(t, err)
	clk.Step(answersStale / 2)
	_, _, err = r.hear(summary(t, "replica-c", clk.Now(), edge), clk.Now())
	require.NoError(t, err)
	clk.Step(answersStale/2 + time.Second)
	assert.Equal(t, map[string]map[string]revisions.RemoteAnswers{"replica-b": {"edge": {}}}, r.expire(clk.Now()))
	assert.Equal(t, edge, r.heard["replica-c"].nodes, "replica-c wrote within the bound")
}

// A follower writes its summary when it changed or a heartbeat after its
// last write, and logs a failure to write once until it changes.
func TestSummaryWritesAreDueOnChangeOrHeartbeat(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r := newTestReplicas(clk)
	one := map[string]revisions.RemoteAnswers{"edge": edgeAnswers}
	assert.True(t, r.due(nil, clk.Now()), "never written")
	assert.True(t, r.due(one, clk.Now()))

	assert.False(t, r.wrote(one, clk.Now(), nil))
	assert.False(t, r.due(one, clk.Now()), "written")
	clk.Step(answersHeartbeat - time.Nanosecond)
	assert.False(t, r.due(one, clk.Now()), "within the heartbeat")
	assert.True(t, r.due(map[string]revisions.RemoteAnswers{"edge": coreAnswers}, clk.Now()), "changed")
	assert.True(t, r.due(nil, clk.Now()), "every node gone")
	clk.Step(time.Nanosecond)
	assert.True(t, r.due(one, clk.Now()), "a heartbeat old")

	down := errors.New("the API server is down")
	assert.True(t, r.wrote(one, clk.Now(), down), "a new failure is logged")
	assert.True(t, r.due(one, clk.Now()), "a failed write is tried again")
	assert.False(t, r.wrote(one, clk.Now(), down), "the same failure is not logged again")
	assert.True(t, r.wrote(one, clk.Now(), errors.New("forbidden")), "another one is")
	assert.False(t, r.wrote(one, clk.Now(), nil))
	assert.True(t, r.wrote(one, clk.Now(), down), "after a success the failure is news again")
}

// A summary keeps under its bounds: each text cut, rejection texts left
// out before the counts, and a refusal when even the counts do not fit.
func TestEncodeAnswersBounds(t *testing.T) {
	long := map[string]revisions.RemoteAnswers{"edge": {Version: "v1", Population: 1, Rejected: 1, Rejections: []revisions.ProxyRejection{
		{Proxy: strings.Repeat("p", 300), Error: strings.Repeat("e", maxAnswerErrorBytes-1) + "é"},
	}}}
	data, err := encodeAnswers(long)
	require.NoError(t, err)
	got := decoded(t, data)["edge"].Rejections[0]
	assert.Len(t, got.Proxy, 253)
	assert.Equal(t, strings.Repeat("e", maxAnswerErrorBytes-1), got.Error, "cut on a rune boundary")

	// The boundary: a summary of exactly maxAnswersBytes keeps its
	// rejection texts; one byte more leaves them out.
	withText := func(pad int) map[string]revisions.RemoteAnswers {
		return map[string]revisions.RemoteAnswers{strings.Repeat("n", pad): {Version: "v1", Population: 1, Rejected: 1, Rejections: []revisions.ProxyRejection{{Proxy: "p", Error: "e"}}}}
	}
	base, err := encodeAnswers(withText(0))
	require.NoError(t, err)
	fits := maxAnswersBytes - len(base)
	data, err = encodeAnswers(withText(fits))
	require.NoError(t, err)
	require.Len(t, data, maxAnswersBytes)
	assert.Len(t, decoded(t, data)[strings.Repeat("n", fits)].Rejections, 1)
	data, err = encodeAnswers(withText(fits + 1))
	require.NoError(t, err)
	counts := decoded(t, data)[strings.Repeat("n", fits+1)]
	assert.Empty(t, counts.Rejections, "texts left out")
	assert.Equal(t, revisions.RemoteAnswers{Version: "v1", Population: 1, Rejected: 1}, counts, "counts kept")

	// Without texts, exactly the bound fits and a byte more is refused.
	bare := func(pad int) map[string]revisions.RemoteAnswers {
		return map[string]revisions.RemoteAnswers{strings.Repeat("n", pad): {Version: "v1", Population: 1}}
	}
	base, err = encodeAnswers(bare(0))
	require.NoError(t, err)
	fits = maxAnswersBytes - len(base)
	data, err = encodeAnswers(bare(fits))
	require.NoError(t, err)
	assert.Len(t, data, maxAnswersBytes)
	_, err = encodeAnswers(bare(fits + 1))
	assert.ErrorContains(t, err, "do not fit in one ConfigMap")

	// Many nodes: texts go, counts stay.
	many := map[string]revisions.RemoteAnswers{}
	for i := range 400 {
		a := revisions.RemoteAnswers{Version: "v1", Population: 5, Rejected: 5}
		for j := range 5 {
			a.Rejections = append(a.Rejections, revisions.ProxyRejection{Proxy: fmt.Sprintf("pod-%d", j), Error: strings.Repeat("x", maxAnswerErrorBytes)})
		}
		many[fmt.Sprintf("node-%03d", i)] = a
	}
	data, err = encodeAnswers(many)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(data), maxAnswersBytes)
	back := decoded(t, data)
	assert.Len(t, back, 400)
	assert.Equal(t, revisions.RemoteAnswers{Version: "v1", Population: 5, Rejected: 5}, back["node-123"])
}

func decoded(t *testing.T, data string) map[string]revisions.RemoteAnswers {
	t.Helper()
	var wire map[string]wireAnswers
	require.NoError(t, json.Unmarshal([]byte(data), &wire))
	out := map[string]revisions.RemoteAnswers{}
	for node, w := range wire {
		out[node] = w.answers()
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// fakeEngine records what a replica tells it.
type fakeEngine struct {
	leading bool
	told    []string // "replica node population"
}

func (e *fakeEngine) Leading() bool                                    { return e.leading }
func (e *fakeEngine) Mirrored(string, uint64) bool                     { return false }
func (e *fakeEngine) Mirror(revisions.NodeData) error                  { return nil }
func (e *fakeEngine) LocalAnswers() map[string]revisions.RemoteAnswers { return nil }
func (e *fakeEngine) ObserveRemote(_ context.Context, node, replica string, a revisions.RemoteAnswers) {
	e.told = append(e.told, fmt.Sprintf("%s %s %d", replica, node, a.Population))
}

// A summary heard reaches the engine node by node in a fixed order, and
// only a leader has the home write the nodes' statuses again (a follower
// writes none).
func TestHeardSummaryReachesEngineAndLeader(t *testing.T) {
	for _, leading := range []bool{true, false} {
		t.Run(fmt.Sprintf("leading=%v", leading), func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			eng := &fakeEngine{leading: leading}
			var counted []string
			r := newTestReplicas(clk)
			r.opts = Options{Engine: eng, Counted: func(node string) { counted = append(counted, node) }}
			cm := &corev1.ConfigMap{Data: summary(t, "replica-b", t0, map[string]revisions.RemoteAnswers{"edge": edgeAnswers, "core": coreAnswers})}

			r.heardSummary(t.Context(), cm, t0)
			assert.Equal(t, []string{"replica-b core 1", "replica-b edge 5"}, eng.told)
			if leading {
				assert.Equal(t, []string{"core", "edge"}, counted)
			} else {
				assert.Empty(t, counted)
			}
		})
	}
}
