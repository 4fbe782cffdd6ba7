package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// The API server waits for a webhook at most its timeoutSeconds (10 s by
// default, 30 s at most) and tells the webhook in the request's timeout
// parameter. A review is decided within that: once the API server has
// given up, an answer reaches no one, and a review still waiting for a
// render slot would only hold its body (up to MaxReviewBytes) in memory.
const (
	defaultReviewTimeout = 10 * time.Second
	maxReviewTimeout     = 30 * time.Second
	// reviewMargin is kept for the answer to travel back, and because the
	// API server rounds the time it has left up to a whole second.
	reviewMargin = time.Second
)

// reviewTimeout is how long the review of r may take: the timeout the API
// server sent (at most maxReviewTimeout), defaultReviewTimeout when it
// sent none or one that does not parse, less reviewMargin.
func reviewTimeout(r *http.Request) time.Duration {
	d := defaultReviewTimeout
	if v, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && v > 0 {
		d = min(v, maxReviewTimeout)
	}
	if d > 2*reviewMargin {
		d -= reviewMargin
	}
	return d
}

type peerKey struct{}

// withPeer is ctx naming the client of the review (its address without the
// port), for the render slots.
func withPeer(ctx context.Context, r *http.Request) context.Context {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return context.WithValue(ctx, peerKey{}, host)
}

// peerOf is the client withPeer named, "" when none did.
func peerOf(ctx context.Context) string {
	p, _ := ctx.Value(peerKey{}).(string)
	return p
}

// errBusy answers a review whose deadline passed while it waited for a
// render slot.
var errBusy = errors.New("legate is busy validating other objects; apply again")

// renderSlots bounds the admission renders running at once to n, and
// those of one client (an address) to perPeer < n. Anyone who reaches the
// webhooks' port may send reviews (the API server cannot be told from
// others without authentication it may not present), so without the
// second bound one client sending heavy renders without pause would hold
// every slot and the API server's reviews would wait until they time out.
// A waiting review holds no slot; it waits until its deadline. Safe for
// concurrent use.
type renderSlots struct {
	mu      sync.Mutex
	free    int
	perPeer int
	held    map[string]int
	// freed is closed, and replaced, whenever a slot is given back.
	freed chan struct{}
}

func newRenderSlots(n, perPeer int) *renderSlots {
	return &renderSlots{free: n, perPeer: perPeer, held: map[string]int{}, freed: make(chan struct{})}
}

// acquire takes a slot for peer, waiting for one until ctx ends (then it
// returns errBusy).
func (s *renderSlots) acquire(ctx context.Context, peer string) error {
	for {
		s.mu.Lock()
		if s.free > 0 && s.held[peer] < s.perPeer {
			s.free--
			s.held[peer]++
			s.mu.Unlock()
			return nil
		}
		freed := s.freed
		s.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return errBusy
		}
	}
}

// release gives back a slot peer took.
func (s *renderSlots) release(peer string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free++
	if s.held[peer]--; s.held[peer] <= 0 {
		delete(s.held, peer)
	}
	close(s.freed)
	s.freed = make(chan struct{})
}

// running is how many slots are taken.
func (s *renderSlots) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.held {
		n += h
	}
	return n
}
