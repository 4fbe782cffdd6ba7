package revisions_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
)

// republished rebuilds, from what the store holds, what the node serves.
func republished(t *testing.T, h *harness) revisions.Publication {
	t.Helper()
	data, err := h.store.Load(context.Background())
	require.NoError(t, err)
	for _, d := range data {
		if d.Record.Node != node {
			continue
		}
		for _, r := range d.Revisions {
			if r.Hash == d.Record.Published {
				pub, err := revisions.PublicationOf(d.Record, r)
				require.NoError(t, err)
				return pub
			}
		}
	}
	t.Fatalf("node %s publishes nothing stored", node)
	return revisions.Publication{}
}

// A follower rebuilds from the store exactly the publication the writer
// made: after a new revision, after a rollback, and after a type left the
// content (it stays, empty).
func TestPublicationIsRebuiltFromTheStore(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "c1"), "sha1")
	assert.Equal(t, h.pub.last(t), republished(t, h))

	h.apply(config("l1", "c2"), "sha2")
	assert.Equal(t, h.pub.last(t), republished(t, h))

	h.events(connect("pod-a"), nack("pod-a", h.pub.last(t), "bad cluster"))
	require.Equal(t, revisions.StateRollback, h.status().State)
	assert.Equal(t, h.pub.last(t), republished(t, h), "the rollback's fresh versions")

	onlyListener := config("l3", "c1")
	delete(onlyListener.Types, cdsType)
	h.apply(onlyListener, "sha3")
	pub := h.pub.last(t)
	require.Contains(t, pub.Types, cdsType)
	assert.Empty(t, pub.Types[cdsType].Resources)
	assert.Equal(t, pub, republished(t, h))

	_, err := revisions.PublicationOf(revisions.NodeRecord{Node: node, Published: "x"}, &revisions.Revision{Hash: "y"})
	assert.Error(t, err)
}

// A NACK only another replica saw taints and rolls back, with its text.
func TestRemoteRejectionTaints(t *testing.T) {
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "c1"), "sha1")
	h.apply(config("l1", "c2"), "sha2")
	bad := h.pub.last(t)
	h.e.ObserveRemote(context.Background(), node, "replica-b", revisions.RemoteAnswers{
		Version: bad.Version, Population: 1, Rejected: 1,
		Rejections: []revisions.ProxyRejection{{Proxy: "pod-b", Error: "cluster c2: bad"}},
	})
	st := h.status()
	assert.Equal(t, revisions.StateRollback, st.State)
	require.True(t, st.History[0].Tainted)
	assert.Contains(t, st.History[0].Taint.Message, "pod-b: cluster c2: bad")
}

// Summaries of another version count their proxies as not answered yet,
// never their rejections, and a replica's summary
// replaces its last one rather than adding to it.
func TestRemoteAnswersAreReplacedNotAdded(t *testing.T) {
	h := newHarness(t, revisions.Options{Threshold: 0.6})
	h.apply(config("l1", "c1"), "sha1")
	h.apply(config("l1", "c2"), "sha2")
	pub := h.pub.last(t)
	h.events(connect("pod-a"), ack("pod-a", pub))
	require.Equal(t, revisions.StateInSync, h.status().State)

	h.e.ObserveRemote(context.Background(), node, "replica-b", revisions.RemoteAnswers{Version: "old-1", Population: 5, Rejected: 5})
	st := h.status()
	assert.Equal(t, revisions.StatePending, st.State, "the proxies of a summary of another publication have not answered this one yet")
	assert.Zero(t, st.Answers.Rejected, "their rejections of another publication do not count")

	one := revisions.RemoteAnswers{Version: pub.Version, Population: 1, Rejected: 1, Rejections: []revisions.ProxyRejection{{Proxy: "pod-b", Error: "no"}}}
	h.e.ObserveRemote(context.Background(), node, "replica-b", one)
	h.e.ObserveRemote(context.Background(), node, "replica-b", one)
	st = h.status()
	assert.Equal(t, revisions.StateDegraded, st.State, "1 of 2 rejected, under 0.6; counted twice it would be 2 of 3")
	assert.Equal(t, 1, st.Answers.Rejected)
	assert.Equal(t, 1, st.Answers.Elsewhere)

	h.e.ObserveRemote(context.Background(), node, "replica-b", revisions.RemoteAnswers{})
	assert.Equal(t, revisions.AnswerCounts{Connected: 1, Accepted: 1}, h.status().Answers, "an empty summary withdraws the replica")
}

// countingStore counts what each commit writes.
type countingStore struct {
	*boltstore.Store
	mu      sync.Mutex
	updates []revisions.Update
	limit   int
}

func (c *countingStore) Commit(ctx context.Context, u revisions.Update) error {
	c.mu.Lock()
	c.updates = append(c.updates, u)
	c.mu.Unlock()
	return c.Store.Commit(ctx, u)
}

func (c *countingStore) RevisionSize(cfg *render.NodeConfig) (size, limit int) {
	return revisions.EncodedSize(cfg), c.limit
}

func (c *countingStore) last() revisions.Update {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updates[len(c.updates)-1]
}

// A taint, a publication time or a new origin of known content rewrites
// the revision's state, never its content.
func TestStateChangesDoNotRewriteContent(t *testing.T) {
	st, err := boltstore.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	cs := &countingStore{Store: st, limit: boltstore.MaxRevisionBytes}
	pub := &recordingPublisher{}
	e, err := revisions.New(revisions.Options{Store: cs, Publisher: pub})
	require.NoError(t, err)
	require.NoError(t, e.Restore(context.Background()))

	c1 := config("l1", "c1")
	require.NoError(t, e.Apply(context.Background(), node, c1, gitOrigin("sha1")))
	u := cs.last()
	require.Len(t, u.Put, 1, "new content is written whole")
	assert.Empty(t, u.States)

	require.NoError(t, e.Apply(context.Background(), node, c1, gitOrigin("sha2")))
	u = cs.last()
	assert.Empty(t, u.Put, "known content is not written again")
	require.Len(t, u.States, 1)
	assert.Equal(t, "sha2", u.States[0].Origin.Commit)

	before := len(cs.updates)
	for _, ev := range []revisions.ProxyEvent{connect("pod-a"), nack("pod-a", pub.last(t), "broken")} {
		ev.Node = node
		e.ObserveProxy(ev)
	}
	revisions.Drain(e)
	tainted := false
	for _, u := range cs.updates[before:] {
		assert.Empty(t, u.Put, "a taint writes no content")
		for _, st := range u.States {
			tainted = tainted || st.Taint != nil
		}
	}
	assert.True(t, tainted, "the taint is written as state")

	data, err := st.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, data[0].Revisions, 1)
	r := data[0].Revisions[0]
	assert.Equal(t, "sha2", r.Origin.Commit)
	require.NotNil(t, r.Taint, "the state written apart is what loads")
	assert.Equal(t, c1.Hash, r.Config.Hash)
}

// A configuration the store cannot hold is refused before anything is
// served, naming the node, its size and the limit.
func TestApplyRefusesWhatTheStoreCannotHold(t *testing.T) {
	st, err := boltstore.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	cs := &countingStore{Store: st, limit: 1024}
	pub := &recordingPublisher{}
	e, err := revisions.New(revisions.Options{Store: cs, Publisher: pub})
	require.NoError(t, err)
	require.NoError(t, e.Restore(context.Background()))

	require.NoError(t, e.Apply(context.Background(), node, config("l1", "c1"), gitOrigin("sha1")))
	big := config("l1", strings.Repeat("x", 2048))
	err = e.Apply(context.Background(), node, big, gitOrigin("sha2"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `node "`+node+`"`)
	assert.Contains(t, err.Error(), "at most 1024")
	assert.Equal(t, 1, pub.count(), "nothing new was served")
	_, _, known := e.Revision(node, big.Hash)
	assert.False(t, known)
}
