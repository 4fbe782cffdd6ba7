package pipeline_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/pipeline"
	"github.com/legate-dev/legate/revisions"
)

// blockingStore keeps nothing; its Commit for the node gated (every node
// when gated is "") announces itself on entered and waits until release
// lets one through (or closes). It counts the commits in progress and the
// most it saw at once.
type blockingStore struct {
	gated   string
	entered chan string
	release chan struct{}

	mu              sync.Mutex
	inFlight, most  int
	committedByNode map[string]int
}

func newBlockingStore(gated string) *blockingStore {
	return &blockingStore{gated: gated, entered: make(chan string, 64), release: make(chan struct{}), committedByNode: map[string]int{}}
}

func (*blockingStore) Load(context.Context) ([]revisions.NodeData, error) { return nil, nil }

func (s *blockingStore) Commit(ctx context.Context, u revisions.Update) error {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.committedByNode[u.Record.Node]++
		s.mu.Unlock()
	}()
	if s.gated == "" || u.Record.Node == s.gated {
		s.entered <- u.Record.Node
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (s *blockingStore) mostAtOnce() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

// publications receives the node of every publication.
type publications chan string

func (p publications) Publish(node string, _ revisions.Publication) error {
	p <- node
	return nil
}

func pipelineOn(t *testing.T, st revisions.Store, pub revisions.Publisher, concurrency int) *pipeline.Pipeline {
	t.Helper()
	e, err := revisions.New(revisions.Options{Store: st, Publisher: pub})
	require.NoError(t, err)
	require.NoError(t, e.Restore(context.Background()))
	p, err := pipeline.New(pipeline.Options{Engine: e, ApplyConcurrency: concurrency})
	require.NoError(t, err)
	return p
}

// One node whose store write hangs does not hold back the other nodes of
// the same commit: they are published while it waits, and the status
// lists every node in order once it is through.
func TestASlowNodeDoesNotHoldBackTheOthersOfItsCommit(t *testing.T) {
	st := newBlockingStore("b-slow")
	pub := make(publications, 64)
	p := pipelineOn(t, st, pub, 0)

	nodes := []string{"a", "b-slow", "c", "d", "e"}
	done := make(chan pipeline.Status, 1)
	go func() { done <- p.Sync(context.Background(), "one", tree("one", "c1", "x", nodes...)) }()

	deadline := time.After(20 * time.Second)
	select {
	case <-st.entered:
	case <-deadline:
		t.Fatal("the slow node's commit never started")
	}
	// Every other node is published while b-slow's write is held (the
	// engine publishes b-slow itself before its write: it is not waited for).
	seen := map[string]bool{}
	for len(seen) < len(nodes)-1 {
		select {
		case node := <-pub:
			if node != "b-slow" {
				seen[node] = true
			}
		case <-deadline:
			t.Fatalf("only %v were published while b-slow's write was held", seen)
		}
	}
	close(st.release)
	var status pipeline.Status
	select {
	case status = <-done:
	case <-deadline:
		t.Fatal("Sync did not return once the slow write was let through")
	}
	assert.Equal(t, nodes, status.Nodes, "the status lists the nodes in order, whatever order they finished in")
	assert.Empty(t, status.ApplyErrors)
}

// No more than ApplyConcurrency of a commit's nodes are written at once,
// and that many are.
func TestApplyConcurrencyBoundsTheWritesOfACommit(t *testing.T) {
	const limit, count = 3, 12
	st := newBlockingStore("")
	pub := make(publications, 64)
	p := pipelineOn(t, st, pub, limit)

	var nodes []string
	for i := range count {
		nodes = append(nodes, string(rune('a'+i)))
	}
	done := make(chan pipeline.Status, 1)
	go func() { done <- p.Sync(context.Background(), "one", tree("one", "c1", "x", nodes...)) }()

	deadline := time.After(20 * time.Second)
	for started := range limit {
		select {
		case <-st.entered:
		case <-deadline:
			t.Fatalf("only %d of the %d writes allowed at once started", started, limit)
		}
	}
	// While those are held, no further write may start: a pipeline
	// without the bound starts all of them at once.
	assert.Never(t, func() bool { return st.mostAtOnce() > limit }, 300*time.Millisecond, 5*time.Millisecond,
		"more than %d writes of one commit in progress at once", limit)
	close(st.release)
	select {
	case status := <-done:
		assert.Equal(t, nodes, status.Nodes)
	case <-deadline:
		t.Fatal("Sync did not return")
	}
	assert.Equal(t, limit, st.mostAtOnce(), "writes in progress at once")
}

// A failed node is reported as with one-at-a-time applies, among nodes
// that succeeded, in order.
func TestAFailedNodeAmongConcurrentOnes(t *testing.T) {
	pub := make(publications, 64)
	p := pipelineOn(t, failOne{node: "c"}, pub, 4)
	st := p.Sync(context.Background(), "one", tree("one", "c1", "x", "a", "b", "c", "d", "e"))
	assert.Equal(t, []string{"a", "b", "d", "e"}, st.Nodes)
	assert.Equal(t, []pipeline.NodeError{{Node: "c", Error: `store revisions of node "c": disk full`}}, st.ApplyErrors)
}

type failOne struct{ node string }

func (failOne) Load(context.Context) ([]revisions.NodeData, error) { return nil, nil }

func (f failOne) Commit(_ context.Context, u revisions.Update) error {
	if u.Record.Node == f.node {
		return errDiskFull
	}
	return nil
}

var errDiskFull = errors.New("disk full")
