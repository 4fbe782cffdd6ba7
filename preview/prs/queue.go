package prs

import (
	"context"
	"errors"
	"sync"
)

// Request is one pull-request event for a previewed source.
type Request struct {
	// Number is the forge's number of the request (GitLab: its iid).
	Number int64
	// HeadSHA is the head commit the event names.
	HeadSHA string
	// HeadRef is where the target repository keeps the head
	// (refs/pull/N/head, refs/merge-requests/N/head).
	HeadRef string
	// Fork says the head comes from another repository: its preview reads
	// no key material and says so.
	Fork bool
	// Closed drops the request's queued work and its work area.
	Closed bool
}

// DefaultConcurrency is how many previews run at once by default.
const DefaultConcurrency = 2

// MaxOpen bounds the pull requests the queue follows at once; an event of
// one more is refused (ErrTooMany) until others close.
const MaxOpen = 1000

// ErrTooMany refuses an event of one more pull request than MaxOpen.
var ErrTooMany = errors.New("too many open pull requests are being previewed")

// ErrClosed is the cause (context.Cause) of a preview cancelled because its
// request was closed.
var ErrClosed = errors.New("the pull request was closed")

// Superseded is the cause (context.Cause) of a preview cancelled because a
// newer head of its request arrived: By is that head.
type Superseded struct{ By string }

func (s *Superseded) Error() string { return "superseded by " + s.By }

// RunFunc does one preview. ctx ends when a newer head of the same request
// arrives (context.Cause: *Superseded), the request is closed (ErrClosed),
// or the queue stops; the preview then returns early, closing the check it
// opened on its head rather than leaving it pending.
type RunFunc func(ctx context.Context, source string, req Request)

// ClosedFunc is called once a closed request's last preview has returned:
// it removes the request's work area.
type ClosedFunc func(source string, number int64)

// Queue schedules the previews of every source of a home. Submit may be
// called from any goroutine and never blocks on a preview.
type Queue struct {
	ctx    context.Context
	run    RunFunc
	closed ClosedFunc
	slots  chan struct{}
	wg     sync.WaitGroup

	mu  sync.Mutex
	prs map[prKey]*prState
}

type prKey struct {
	source string
	number int64
}

// prState is one request's place in the queue. A worker goroutine exists
// while working is true; it takes pending only once it holds a slot, so
// the heads that arrive while it waits replace one another.
type prState struct {
	pending  *Request
	working  bool
	closing  bool
	running  string // head being rendered, "" when none
	cancel   context.CancelCauseFunc
	lastDone string // head whose preview completed
}

// NewQueue returns a queue that runs at most concurrency previews at once
// (zero: DefaultConcurrency) until ctx ends.
func NewQueue(ctx context.Context, concurrency int, run RunFunc, closed ClosedFunc) *Queue {
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	if closed == nil {
		closed = func(string, int64) {}
	}
	return &Queue{ctx: ctx, run: run, closed: closed, slots: make(chan struct{}, concurrency), prs: map[prKey]*prState{}}
}

// Submit hands the queue one event of source's pull request.
func (q *Queue) Submit(source string, req Request) error {
	key := prKey{source, req.Number}
	q.mu.Lock()
	st := q.prs[key]
	if st == nil {
		if req.Closed {
			q.mu.Unlock()
			// Nothing queued or running, but an earlier run of this
			// process may have left a work area.
			q.closed(source, req.Number)
			return nil
		}
		if len(q.prs) >= MaxOpen && !q.evictIdleLocked() {
			q.mu.Unlock()
			return ErrTooMany
		}
		st = &prState{}
		q.prs[key] = st
	}
	if req.Closed {
		st.closing, st.pending = true, nil
		if st.cancel != nil {
			st.cancel(ErrClosed)
		}
		if st.working {
			q.mu.Unlock() // the worker removes the work area when it returns
			return nil
		}
		delete(q.prs, key)
		q.mu.Unlock()
		q.closed(source, req.Number)
		return nil
	}
	st.closing = false // reopened before the worker noticed the close
	switch {
	case st.pending != nil && st.pending.HeadSHA == req.HeadSHA,
		st.pending == nil && st.running == req.HeadSHA,
		st.pending == nil && st.running == "" && st.lastDone == req.HeadSHA:
		q.mu.Unlock() // this head is queued, rendering or done
		return nil
	}
	r := req
	st.pending = &r
	if st.cancel != nil && st.running != req.HeadSHA {
		st.cancel(&Superseded{By: req.HeadSHA}) // only the newest head is worth finishing
	}
	if !st.working {
		st.working = true
		q.wg.Add(1)
		go q.work(key, st)
	}
	q.mu.Unlock()
	return nil
}

// work runs the previews of one request, newest head first, until none is
// pending.
func (q *Queue) work(key prKey, st *prState) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		if st.closing || st.pending == nil {
			st.working = false
			closing := st.closing
			if closing || st.lastDone == "" {
				delete(q.prs, key)
			}
			q.mu.Unlock()
			if closing {
				q.closed(key.source, key.number)
			}
			return
		}
		q.mu.Unlock()

		select {
		case q.slots <- struct{}{}:
		case <-q.ctx.Done():
			q.mu.Lock()
			st.working = false
			delete(q.prs, key)
			q.mu.Unlock()
			return
		}
		q.mu.Lock()
		req := st.pending
		st.pending = nil
		if req == nil || st.closing {
			q.mu.Unlock()
			<-q.slots
			continue
		}
		ctx, cancel := context.WithCancelCause(q.ctx)
		st.cancel, st.running = cancel, req.HeadSHA
		q.mu.Unlock()

		q.run(ctx, key.source, *req)
		superseded := ctx.Err() != nil
		cancel(nil)
		<-q.slots

		q.mu.Lock()
		st.cancel, st.running = nil, ""
		if !superseded {
			st.lastDone = req.HeadSHA
		}
		q.mu.Unlock()
	}
}

// evictIdleLocked forgets one request with nothing queued or running (it
// is kept only to skip a repeated event of its head, such as one whose
// close was never delivered) and reports whether there was one.
func (q *Queue) evictIdleLocked() bool {
	for k, st := range q.prs {
		if !st.working {
			delete(q.prs, k)
			return true
		}
	}
	return false
}

// Wait returns once no preview runs or waits (tests, shutdown).
func (q *Queue) Wait() { q.wg.Wait() }
