package revisions_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/revisions/boltstore"
)

// gatedStore is a bolt store whose Commit for one node waits at a gate
// until the test opens it, as an API server that answers late would; it
// records every Update it is handed, per node, in the order it got them.
type gatedStore struct {
	*boltstore.Store
	gated   string
	entered chan struct{} // receives once per Commit of the gated node
	open    chan struct{} // closed to let the gated node's commits through

	mu      sync.Mutex
	updates map[string][]revisions.Update
}

func newGatedStore(t *testing.T, gated string) *gatedStore {
	t.Helper()
	st, err := boltstore.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return &gatedStore{Store: st, gated: gated, entered: make(chan struct{}, 16), open: make(chan struct{}), updates: map[string][]revisions.Update{}}
}

func (s *gatedStore) Commit(ctx context.Context, u revisions.Update) error {
	if u.Record.Node == s.gated {
		s.entered <- struct{}{}
		<-s.open
	}
	// Let the scheduler run another goroutine here: a commit that could
	// overtake this one gets every chance to.
	runtime.Gosched()
	s.mu.Lock()
	s.updates[u.Record.Node] = append(s.updates[u.Record.Node], u)
	s.mu.Unlock()
	return s.Store.Commit(ctx, u)
}

func (s *gatedStore) committed(node string) []revisions.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]revisions.Update(nil), s.updates[node]...)
}

// configOf is config rendered for node id.
func configOf(id, listener, cluster string) *render.NodeConfig {
	cfg := config(listener, cluster)
	cfg.NodeID = id
	return cfg
}

// published is the last publication pub made to node, if any.
func (p *recordingPublisher) lastOf(node string) (revisions.Publication, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.pubs) - 1; i >= 0; i-- {
		if p.nodes[i] == node {
			return p.pubs[i], true
		}
	}
	return revisions.Publication{}, false
}

func (p *recordingPublisher) versionsOf(node string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i, n := range p.nodes {
		if n == node {
			out = append(out, p.pubs[i].Version)
		}
	}
	return out
}

func newGatedEngine(t *testing.T, st revisions.Store, pub revisions.Publisher) *revisions.Engine {
	t.Helper()
	e, err := revisions.New(revisions.Options{Store: st, Publisher: pub})
	require.NoError(t, err)
	require.NoError(t, e.Restore(context.Background()))
	return e
}

// applyHeldInStore starts an Apply of the gated node "a" and returns once
// its commit has reached the store (where it stays until st.open closes);
// the Apply's result arrives on the channel.
func applyHeldInStore(t *testing.T, e *revisions.Engine, st *gatedStore) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- e.Apply(context.Background(), "a", configOf("a", "la", "ca"), gitOrigin("sha-a")) }()
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("node a's commit never reached the store")
	}
	return done
}

func TestSlowStoreWriteOfOneNodeDelaysNoOtherNode(t *testing.T) {
	st := newGatedStore(t, "a")
	pub := &recordingPublisher{}
	e := newGatedEngine(t, st, pub)
	ctx := context.Background()

	aDone := applyHeldInStore(t, e, st)

	bDone := make(chan error, 1)
	go func() { bDone <- e.Apply(ctx, "b", configOf("b", "lb", "cb"), gitOrigin("sha-b")) }()
	require.Eventually(t, func() bool {
		select {
		case err := <-bDone:
			require.NoError(t, err)
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond, "node b's apply waits for node a's store write")

	_, ok := pub.lastOf("b")
	assert.True(t, ok, "node b is published")
	sb, ok := e.Node("b")
	require.True(t, ok, "node b is readable")
	require.NotNil(t, sb.Published)
	assert.Equal(t, "sha-b", sb.Published.Commit)
	// The reads do not wait for node a's write either; a's publication is
	// made and shown while its record is being stored.
	sa, ok := e.Node("a")
	require.True(t, ok, "node a is readable")
	require.NotNil(t, sa.Published)
	assert.Equal(t, "sha-a", sa.Published.Commit)
	assert.Len(t, e.Nodes(), 2)
	assert.Equal(t, map[string]string{"a": "config", "b": "config"}, e.Owners())
	select {
	case err := <-aDone:
		t.Fatalf("node a's apply returned (%v) before its store write", err)
	default:
	}

	close(st.open)
	select {
	case err := <-aDone:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("node a's apply did not return once its write went through")
	}
	data, err := st.Load(ctx)
	require.NoError(t, err)
	stored := map[string]string{}
	for _, d := range data {
		stored[d.Record.Node] = d.Record.Published
	}
	assert.Equal(t, map[string]string{"a": sa.Published.Hash, "b": sb.Published.Hash}, stored)
}

func TestAnswersArrivingDuringASlowStoreWriteAreApplied(t *testing.T) {
	st := newGatedStore(t, "a")
	pub := &recordingPublisher{}
	e := newGatedEngine(t, st, pub)

	aDone := applyHeldInStore(t, e, st)
	p, ok := pub.lastOf("a")
	require.True(t, ok)
	for _, ev := range []revisions.ProxyEvent{connect("p1"), ack("p1", p)} {
		ev.Node = "a"
		e.ObserveProxy(ev)
	}
	// Draining does not wait for the node's write: its answers are left to
	// the goroutine that writes.
	drained := make(chan struct{})
	go func() { revisions.Drain(e); close(drained) }()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatal("draining the answers waits for the node's store write")
	}
	s, _ := e.Node("a")
	assert.Equal(t, revisions.StatePending, s.State, "judged before the write is done")

	close(st.open)
	require.NoError(t, <-aDone)
	s, _ = e.Node("a")
	assert.Equal(t, revisions.StateInSync, s.State, "the answer that came during the write is lost")
	assert.Equal(t, 1, s.Answers.Accepted)
}

func TestConcurrentAppliesToOneNodeStayInOrder(t *testing.T) {
	st := newGatedStore(t, "")
	pub := &recordingPublisher{}
	e := newGatedEngine(t, st, pub)
	ctx := context.Background()

	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				cfg := configOf(node, fmt.Sprintf("l-%d-%d", w, i), "c")
				errs <- e.Apply(ctx, node, cfg, gitOrigin(fmt.Sprintf("sha-%d-%d", w, i)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	// Every Apply committed once, each from the record the previous one
	// stored, and the commits came in the order of the publications.
	ups := st.committed(node)
	require.Len(t, ups, writers*each)
	versions := pub.versionsOf(node)
	require.Len(t, versions, writers*each)
	for i, u := range ups {
		assert.Equal(t, uint64(i+1), u.Record.Revision, "commit %d overtook or repeated another", i)
		assert.Equal(t, versions[i], u.Record.Version, "commit %d stores another publication than the one made before it", i)
	}

	// The stored, served and published final state is the last Apply's.
	last := ups[len(ups)-1].Record
	data, err := st.Load(ctx)
	require.NoError(t, err)
	require.Len(t, data, 1)
	assert.Equal(t, last.Published, data[0].Record.Published)
	assert.Equal(t, last.History[0], data[0].Record.Published, "the newest content is what is stored as published")
	s, ok := e.Node(node)
	require.True(t, ok)
	require.NotNil(t, s.Published)
	assert.Equal(t, last.Published, s.Published.Hash)
	assert.Equal(t, last.Version, s.Published.Version)
	p, _ := pub.lastOf(node)
	assert.Equal(t, last.Version, p.Version)
}

// heldStore is a bolt store whose commits, once held is set, each wait at
// a gate until the test opens it, as an API server that answers late would.
type heldStore struct {
	*boltstore.Store
	held    atomic.Bool
	entered chan string   // receives the node of each held commit
	open    chan struct{} // closed to let the held commits through
}

func (s *heldStore) Commit(ctx context.Context, u revisions.Update) error {
	if s.held.Load() {
		s.entered <- u.Record.Node
		<-s.open
	}
	return s.Store.Commit(ctx, u)
}

// When the proxies of many nodes reject their publications together, or
// fall silent past the answer timeout together, the taints are written
// side by side: a fleet rolls back in a few store round trips, not one
// round trip per node after the other (1 000 nodes behind an API server
// that takes 200 ms a write took over three minutes).
func TestTaintsOfManyNodesAreStoredSideBySide(t *testing.T) {
	const nodes = 8
	// Every node has two proxies; at the threshold of one half, one
	// rejection taints a publication once the other proxy's answer is
	// in or overdue.
	for _, tt := range []struct {
		name string
		// rejectFirst: pod-N rejects before the store is held.
		rejectFirst bool
		// judge has the engine judge the bad publications (by node): a
		// drain of rejections or a Tick past the answer timeout. It
		// returns once every node's taint is stored.
		judge func(e *revisions.Engine, clock *fakeClock, bad map[string]revisions.Publication)
	}{
		{"rejected", false, func(e *revisions.Engine, _ *fakeClock, bad map[string]revisions.Publication) {
			for id, p := range bad {
				for _, proxy := range []string{"pod-", "quiet-"} {
					ev := nack(proxy+id, p, "refused")
					ev.Node = id
					e.ObserveProxy(ev)
				}
			}
			revisions.Drain(e)
		}},
		{"timed out", true, func(e *revisions.Engine, clock *fakeClock, _ map[string]revisions.Publication) {
			e.Tick(context.Background(), clock.Step(time.Minute))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := boltstore.Open(t.TempDir())
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			held := &heldStore{Store: st, entered: make(chan string, nodes), open: make(chan struct{})}
			pub := &recordingPublisher{}
			clock := newFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			e, err := revisions.New(revisions.Options{Store: held, Publisher: pub, Clock: clock, Timeout: 30 * time.Second, Threshold: 0.5})
			require.NoError(t, err)
			require.NoError(t, e.Restore(context.Background()))
			ctx := context.Background()

			observe := func(id string, evs ...revisions.ProxyEvent) {
				for _, ev := range evs {
					ev.Node = id
					e.ObserveProxy(ev)
				}
				revisions.Drain(e)
			}
			bad := map[string]revisions.Publication{}
			for i := range nodes {
				id := fmt.Sprintf("n%d", i)
				require.NoError(t, e.Apply(ctx, id, configOf(id, "l", "good"), gitOrigin("sha-good")))
				good, _ := pub.lastOf(id)
				observe(id, connect("pod-"+id), ack("pod-"+id, good), connect("quiet-"+id), ack("quiet-"+id, good))
				require.NoError(t, e.Apply(ctx, id, configOf(id, "l", "bad"), gitOrigin("sha-bad")))
				bad[id], _ = pub.lastOf(id)
				if tt.rejectFirst {
					observe(id, nack("pod-"+id, bad[id], "refused"))
					s, _ := e.Node(id)
					require.Equal(t, revisions.StatePending, s.State, "%s waits for its quiet proxy", id)
				}
			}

			held.held.Store(true)
			judged := make(chan struct{})
			go func() { tt.judge(e, clock, bad); close(judged) }()

			// Every node's taint reaches the store while none has been
			// answered.
			in := map[string]bool{}
			deadline := time.After(10 * time.Second)
			for len(in) < nodes {
				select {
				case id := <-held.entered:
					in[id] = true
				case <-deadline:
					held.held.Store(false)
					close(held.open)
					<-judged
					t.Fatalf("only %d of %d nodes' taints reached the store while the first was unanswered: %v", len(in), nodes, in)
				}
			}
			held.held.Store(false)
			close(held.open)
			select {
			case <-judged:
			case <-time.After(10 * time.Second):
				t.Fatal("the taints were not applied once the store answered")
			}
			for id := range bad {
				s, ok := e.Node(id)
				require.True(t, ok, id)
				assert.Equal(t, revisions.StateRollback, s.State, id)
				require.NotNil(t, s.Published, id)
				assert.Equal(t, "sha-good", s.Published.Commit, id)
			}
		})
	}
}
