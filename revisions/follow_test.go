package revisions_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
)

// sharedStore is a store two engines share, as replicas share the API
// server: records guarded by their revision, content copied in and out.
type sharedStore struct {
	mu    sync.Mutex
	nodes map[string]*revisions.NodeData
	// refuse, when set, fails every commit from then on: the writer died.
	refuse bool
}

func newSharedStore() *sharedStore { return &sharedStore{nodes: map[string]*revisions.NodeData{}} }

func (s *sharedStore) Load(context.Context) ([]revisions.NodeData, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []revisions.NodeData
	for _, d := range s.nodes {
		cp := revisions.NodeData{Record: d.Record}
		cp.Record.History = slices.Clone(d.Record.History)
		for _, r := range d.Revisions {
			c := *r
			cp.Revisions = append(cp.Revisions, &c)
		}
		out = append(out, cp)
	}
	return out, nil
}

func (s *sharedStore) node(id string) revisions.NodeData {
	all, _ := s.Load(context.Background())
	for _, d := range all {
		if d.Record.Node == id {
			return d
		}
	}
	return revisions.NodeData{}
}

func (s *sharedStore) Commit(_ context.Context, u revisions.Update) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		return errors.New("the writer is gone")
	}
	d := s.nodes[u.Record.Node]
	if d == nil {
		d = &revisions.NodeData{}
		s.nodes[u.Record.Node] = d
	}
	if u.Record.Revision != d.Record.Revision+1 {
		return fmt.Errorf("%w: at %d, update from %d", revisions.ErrConflict, d.Record.Revision, u.Record.Revision-1)
	}
	for _, r := range u.Put {
		c := *r
		d.Revisions = slices.DeleteFunc(d.Revisions, func(x *revisions.Revision) bool { return x.Hash == r.Hash })
		d.Revisions = append(d.Revisions, &c)
	}
	for _, st := range u.States {
		for i, r := range d.Revisions {
			if r.Hash == st.Hash {
				d.Revisions[i] = r.WithState(st)
			}
		}
	}
	d.Record = u.Record
	d.Revisions = slices.DeleteFunc(d.Revisions, func(x *revisions.Revision) bool { return slices.Contains(u.Delete, x.Hash) })
	return nil
}

// replica is one engine on the shared store.
type replica struct {
	e   *revisions.Engine
	pub *recordingPublisher
}

func newReplica(t *testing.T, st *sharedStore, clock *fakeClock, lead bool) *replica {
	t.Helper()
	r := &replica{pub: &recordingPublisher{}}
	e, err := revisions.New(revisions.Options{Store: st, Publisher: r.pub, Clock: clock, Threshold: 0.5})
	require.NoError(t, err)
	if lead {
		require.NoError(t, e.Restore(context.Background()))
	} else {
		require.NoError(t, e.Follow(context.Background()))
	}
	r.e = e
	return r
}

func (r *replica) events(evs ...revisions.ProxyEvent) {
	for _, ev := range evs {
		ev.Node = node
		r.e.ObserveProxy(ev)
	}
	revisions.Drain(r.e)
}

// A follower serves what the leader stored under the leader's versions and
// decides nothing; its proxies' rejection reaches the leader as a summary
// and is rolled back once; when the leader is gone, the follower leads on
// from the store without a new publication of what is served, and keeps
// the taint.
func TestFollowerServesTheLeadersPublicationsAndTakesOver(t *testing.T) {
	ctx := context.Background()
	st := newSharedStore()
	clock := newFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	leader, follower := newReplica(t, st, clock, true), newReplica(t, st, clock, false)
	assert.False(t, follower.e.Leading())

	require.NoError(t, leader.e.Apply(ctx, node, config("l1", "c1"), gitOrigin("sha1")))
	require.NoError(t, follower.e.Mirror(st.node(node)))
	good := leader.pub.last(t)
	assert.Equal(t, good, follower.pub.last(t), "the same publication, versions and all")
	rec := st.node(node).Record
	assert.True(t, follower.e.Mirrored(node, rec.Revision), "the record read is known")
	assert.False(t, follower.e.Mirrored(node, rec.Revision+1), "a newer record is to be read")
	assert.False(t, follower.e.Mirrored("other", 1))
	require.NoError(t, follower.e.Mirror(st.node(node)))
	assert.Equal(t, 1, follower.pub.count(), "a record already served is not served again")
	assert.ErrorIs(t, follower.e.Apply(ctx, node, config("l1", "c9"), gitOrigin("sha9")), revisions.ErrNotLeader)
	assert.ErrorIs(t, follower.e.ClearTaint(ctx, node, "x"), revisions.ErrNotLeader)

	// A bad commit: the leader's proxy accepts it, the follower's rejects it.
	require.NoError(t, leader.e.Apply(ctx, node, config("l1", "c2"), gitOrigin("sha2")))
	require.NoError(t, follower.e.Mirror(st.node(node)))
	bad := leader.pub.last(t)
	require.Equal(t, bad, follower.pub.last(t))
	leader.events(connect("pod-a"), ack("pod-a", bad))
	follower.events(connect("pod-b"), nack("pod-b", bad, "cluster c2: unknown field"))
	assert.Equal(t, bad.Version, leader.pub.last(t).Version, "the follower decides nothing")
	answers := follower.e.LocalAnswers()[node]
	assert.Equal(t, revisions.RemoteAnswers{
		Version: bad.Version, Population: 1, Rejected: 1,
		Rejections: []revisions.ProxyRejection{{Proxy: "pod-b", Error: "cluster c2: unknown field"}},
	}, answers)
	leader.e.ObserveRemote(ctx, node, "replica-b", answers)
	leader.e.ObserveRemote(ctx, node, "replica-b", answers)
	rollback := leader.pub.last(t)
	assert.Equal(t, 3, leader.pub.count(), "one rollback, however often the summary comes")
	status, _ := leader.e.Node(node)
	assert.Equal(t, revisions.StateRollback, status.State)
	assert.Contains(t, status.History[0].Taint.Message, "pod-b: cluster c2: unknown field")

	require.NoError(t, follower.e.Mirror(st.node(node)))
	assert.Equal(t, rollback, follower.pub.last(t), "the follower serves the rollback as the leader made it")

	// The leader dies; the follower leads from the store.
	require.NoError(t, follower.e.Lead(ctx))
	assert.True(t, follower.e.Leading())
	assert.Equal(t, rollback, follower.pub.last(t), "what is served stays, under its versions")
	fstatus, _ := follower.e.Node(node)
	assert.Equal(t, revisions.StateRollback, fstatus.State)
	assert.NotNil(t, fstatus.History[0].Taint, "the taint is kept")
	require.NoError(t, follower.e.Apply(ctx, node, config("l1", "c3"), gitOrigin("sha3")), "the new leader writes on the stored record")
	now, _ := follower.e.Node(node)
	assert.Equal(t, st.node(node).Record.Published, now.Published.Hash)
	assert.NotEqual(t, rollback.Version, follower.pub.last(t).Version)
}

// A leader that stored a taint and died before its rollback was stored
// leaves the store serving the tainted revision: the next leader rolls
// back at once.
func TestNewLeaderFinishesARollbackTheLastOneStarted(t *testing.T) {
	ctx := context.Background()
	st := newSharedStore()
	clock := newFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	leader, follower := newReplica(t, st, clock, true), newReplica(t, st, clock, false)
	require.NoError(t, leader.e.Apply(ctx, node, config("l1", "c1"), gitOrigin("sha1")))
	good := leader.pub.last(t)
	require.NoError(t, leader.e.Apply(ctx, node, config("l1", "c2"), gitOrigin("sha2")))
	bad := leader.pub.last(t)
	require.NoError(t, follower.e.Mirror(st.node(node)))

	// The taint is stored; the rollback's write fails: the leader died.
	var once sync.Once
	leader.pub.refuse = func(string, revisions.Publication) error {
		once.Do(func() { st.mu.Lock(); st.refuse = true; st.mu.Unlock() })
		return nil
	}
	leader.events(connect("pod-a"), nack("pod-a", bad, "no"))
	stored := st.node(node)
	require.Equal(t, stored.Record.Published, revisionHash(stored, bad), "the store still serves the rejected revision")
	st.mu.Lock()
	st.refuse = false
	st.mu.Unlock()

	require.NoError(t, follower.e.Lead(ctx))
	now := follower.pub.last(t)
	assert.NotEqual(t, bad.Version, now.Version, "the new leader rolls back")
	assert.Equal(t, good.Types[cdsType].Resources, now.Types[cdsType].Resources, "to the good revision")
	stored = st.node(node)
	assert.Equal(t, revisionHash(stored, now), stored.Record.Published, "and stores it")
	status, _ := follower.e.Node(node)
	assert.Equal(t, revisions.StateRollback, status.State)
}

// revisionHash is the hash of the stored revision pub serves.
func revisionHash(d revisions.NodeData, pub revisions.Publication) string {
	for _, r := range d.Revisions {
		if string(r.Config.Types[cdsType].Resources[0].Body) == string(pub.Types[cdsType].Resources[0].Body) {
			return r.Hash
		}
	}
	return ""
}
