package xds

import (
	"sync"
	"time"
)

// maxPushers bounds the goroutines that push new snapshots to streams.
// SendMsg of a response larger than gRPC's per-stream write quota (64 KiB)
// waits for the connection's writer to drain it, so a pusher mostly waits:
// enough of them keep every core busy writing while the rest of the
// streams wait in the queue holding no stack of their own.
const maxPushers = 64

// pushQueue holds the streams that have a snapshot or an authorization
// change to look at, in the order they were notified, and the goroutines
// that serve them. A stream is queued at most once however many
// notifications arrive before a pusher takes it: the pusher sends from the
// node's newest snapshot. Pushers exit when the queue is empty, so an idle
// server holds none.
type pushQueue struct {
	mu      sync.Mutex
	streams []*streamBase
	pushers int
	// limit replaces maxPushers when set (tests); peak is the most pushers
	// that ran at once.
	limit, peak int
	// slow is slowPush, read when the server was made.
	slow time.Duration
}

// add queues b unless it is queued already, and starts a pusher when
// fewer than maxPushers run. It never blocks on a push.
func (q *pushQueue) add(b *streamBase) {
	q.mu.Lock()
	if b.queued {
		q.mu.Unlock()
		return
	}
	b.queued = true
	q.streams = append(q.streams, b)
	limit := q.limit
	if limit <= 0 {
		limit = maxPushers
	}
	start := q.pushers < limit
	if start {
		q.pushers++
		q.peak = max(q.peak, q.pushers)
	}
	q.mu.Unlock()
	if start {
		go q.run()
	}
}

// run pushes to queued streams until none is left.
func (q *pushQueue) run() {
	for {
		q.mu.Lock()
		if len(q.streams) == 0 {
			// Drop the emptied backing array: after a push to 10 000
			// streams it would hold 80 KB until the next one.
			q.streams = nil
			q.pushers--
			q.mu.Unlock()
			return
		}
		b := q.streams[0]
		q.streams[0] = nil
		q.streams = q.streams[1:]
		// Cleared before the push, so that a notification arriving during
		// it queues the stream again.
		b.queued = false
		q.mu.Unlock()
		if q.pushSlow(b) {
			return // a pusher took this one's place while it waited
		}
	}
}

// slowPush is how long a push may wait on its stream (a proxy that reads
// slowly, or not at all, until sendTimeout ends it) before its pusher
// gives up its place to a new one, so that the queue keeps moving however
// many such streams it holds (a var for tests).
var slowPush = time.Second

// pushSlow pushes to b and reports whether the push outlasted slowPush:
// then another pusher was started in this one's place (when streams are
// waiting), and this one must end once its push does.
func (q *pushQueue) pushSlow(b *streamBase) (retired bool) {
	var mu sync.Mutex
	done := false
	timer := time.AfterFunc(q.slow, func() {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		retired = true
		q.mu.Lock()
		start := len(q.streams) > 0
		if !start {
			q.pushers-- // nobody waits: this one leaves the count now
		}
		q.mu.Unlock()
		if start {
			go q.run() // in this one's place, counted as it was
		}
	})
	b.pushQueued()
	timer.Stop()
	mu.Lock()
	defer mu.Unlock()
	done = true
	return retired
}
