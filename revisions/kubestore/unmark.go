package kubestore

import (
	"context"
	"sync"
	"time"
)

// Unmarking the revision served before (its status.published flag, for
// kubectl) is the dearest of a publication's writes: the API server reads
// the stored object, applies the patch and validates it whole again. A
// commit that changes 1 000 nodes spent about half its time there. The
// record is the source of truth and is written first, so the unmarking
// leaves the publication's path: queued after the record, written by at
// most unmarkWorkers goroutines, each under its node's lock so that no
// commit of the node runs meanwhile, and dropped when the node's record
// (as this store last wrote it) serves that revision again.

// unmarkWorkers bounds the API calls the queue has in flight: the
// publications it trails keep the rest of the API server.
const unmarkWorkers = 1

// unmarkDelay is how long an unmarking gives way to commits in flight:
// during a burst (a commit that changes 1 000 nodes) the publications go
// first, and a steady stream of commits holds none back for longer
// than this.
const unmarkDelay = 5 * time.Second

// unmarkTimeout bounds one unmarking's API calls.
const unmarkTimeout = 30 * time.Second

type unmark struct{ node, hash string }

type queuedUnmark struct {
	unmark
	at time.Time
}

// beforeUnmark, set by tests only, is called before an unmarking takes
// its node's lock.
var beforeUnmark func(node, hash string)

// unmarkQueue holds the unmarkings not written yet, each once, oldest
// first, and the per-node locks that keep them apart from the node's
// commits.
type unmarkQueue struct {
	mu      sync.Mutex
	pending []queuedUnmark
	queued  map[unmark]bool
	running int
	idle    *sync.Cond

	// inflight counts the commits running; quiet is closed when it
	// drops to zero.
	inflight int
	quiet    chan struct{}

	nodes sync.Map // node ID → *sync.Mutex
}

func newUnmarkQueue() *unmarkQueue {
	q := &unmarkQueue{queued: map[unmark]bool{}, quiet: make(chan struct{})}
	close(q.quiet)
	q.idle = sync.NewCond(&q.mu)
	return q
}

// begin counts a commit in flight until the function it returns is
// called.
func (q *unmarkQueue) begin() func() {
	if q == nil {
		return func() {}
	}
	q.mu.Lock()
	if q.inflight == 0 {
		q.quiet = make(chan struct{})
	}
	q.inflight++
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.inflight--; q.inflight == 0 {
			close(q.quiet)
		}
	}
}

// giveWay waits until no commit is in flight or until is reached.
func (q *unmarkQueue) giveWay(until time.Time) {
	q.mu.Lock()
	quiet := q.quiet
	q.mu.Unlock()
	wait := time.Until(until)
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-quiet:
	case <-t.C:
	}
}

// lockNode takes node's lock and returns the function that lets it go.
func (q *unmarkQueue) lockNode(node string) func() {
	if q == nil {
		return func() {}
	}
	m, _ := q.nodes.LoadOrStore(node, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// add queues the unmarking of node's revision hash, starting a worker
// when fewer than unmarkWorkers run; write writes one.
func (q *unmarkQueue) add(node, hash string, write func(unmark)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	u := unmark{node, hash}
	if q.queued[u] {
		return
	}
	q.queued[u] = true
	q.pending = append(q.pending, queuedUnmark{u, time.Now()})
	if q.running < unmarkWorkers {
		q.running++
		go q.work(write)
	}
}

// work writes queued unmarkings until none is left.
func (q *unmarkQueue) work(write func(unmark)) {
	for {
		q.mu.Lock()
		if len(q.pending) == 0 {
			q.running--
			q.idle.Broadcast()
			q.mu.Unlock()
			return
		}
		oldest := q.pending[0].at
		q.mu.Unlock()
		q.giveWay(oldest.Add(unmarkDelay))
		// Another worker may have taken it meanwhile: take the oldest
		// left, no younger than the one waited for.
		q.mu.Lock()
		if len(q.pending) == 0 {
			q.mu.Unlock()
			continue
		}
		u := q.pending[0]
		q.pending = q.pending[1:]
		delete(q.queued, u.unmark)
		q.mu.Unlock()
		write(u.unmark)
	}
}

// wait returns once nothing is queued or being written.
func (q *unmarkQueue) wait() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.pending) > 0 || q.running > 0 {
		q.idle.Wait()
	}
}

// Settle waits until every unmarking queued so far is written (or
// given up): what a test or a benchmark reads after publications to see
// every published flag right.
func (s Store) Settle() {
	if s.unmarks != nil {
		s.unmarks.wait()
	}
}

// writeUnmark clears the published flag of a revision a commit of this
// store replaced, unless the node's record serves it again.
// A record this store does not hold (its last write failed) is left
// alone: the engine makes that commit again whole, flags included.
func (s Store) writeUnmark(u unmark) {
	if beforeUnmark != nil {
		beforeUnmark(u.node, u.hash)
	}
	defer s.unmarks.lockNode(u.node)()
	cm := s.records.get(u.node)
	if cm == nil {
		return
	}
	if rec, err := RecordOf(cm); err != nil || rec.Published == u.hash {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), unmarkTimeout)
	defer cancel()
	s.markPublished(ctx, u.node, u.hash, false, nil, false)
}
