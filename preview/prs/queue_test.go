package prs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runs records the previews a queue ran and lets the test hold them.
type runs struct {
	mu        sync.Mutex
	calls     []string // "source#N@head"
	cancelled []string
	now, max  int
	closed    []string
	gates     map[string]chan struct{} // head -> released when closed
}

func newRuns() *runs { return &runs{gates: map[string]chan struct{}{}} }

func (r *runs) gate(head string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := make(chan struct{})
	r.gates[head] = g
	return g
}

func (r *runs) run(ctx context.Context, source string, req Request) {
	id := fmt.Sprintf("%s#%d@%s", source, req.Number, req.HeadSHA)
	r.mu.Lock()
	r.calls = append(r.calls, id)
	r.now++
	r.max = max(r.max, r.now)
	g := r.gates[req.HeadSHA]
	r.mu.Unlock()
	if g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			r.mu.Lock()
			r.cancelled = append(r.cancelled, id)
			r.mu.Unlock()
		}
	}
	r.mu.Lock()
	r.now--
	r.mu.Unlock()
}

func (r *runs) close(source string, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = append(r.closed, fmt.Sprintf("%s#%d", source, n))
}

func (r *runs) snapshot() (calls, cancelled, closed []string, maxRunning int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls), slices.Clone(r.cancelled), slices.Clone(r.closed), r.max
}

func (r *runs) started(id string) func() bool {
	return func() bool {
		calls, _, _, _ := r.snapshot()
		return slices.Contains(calls, id)
	}
}

const wait = 10 * time.Second

// A storm of pushes to one request while every slot is taken renders the
// newest head once, and nothing in between.
func TestStormRendersNewestOnce(t *testing.T) {
	r := newRuns()
	q := NewQueue(context.Background(), 1, r.run, r.close)
	busy := r.gate("busy")
	require.NoError(t, q.Submit("cfg", Request{Number: 1, HeadSHA: "busy"}))
	require.Eventually(t, r.started("cfg#1@busy"), wait, time.Millisecond)
	for i := range 50 {
		require.NoError(t, q.Submit("cfg", Request{Number: 7, HeadSHA: fmt.Sprintf("h%02d", i)}))
	}
	close(busy)
	q.Wait()
	calls, _, _, _ := r.snapshot()
	assert.Equal(t, []string{"cfg#1@busy", "cfg#7@h49"}, calls)

	// The same head again (a re-delivered event) is not rendered again.
	require.NoError(t, q.Submit("cfg", Request{Number: 7, HeadSHA: "h49"}))
	q.Wait()
	calls, _, _, _ = r.snapshot()
	assert.Len(t, calls, 2)
}

// A newer head cancels the render of an older one, which then renders.
func TestNewerHeadCancelsOlder(t *testing.T) {
	r := newRuns()
	q := NewQueue(context.Background(), 2, r.run, r.close)
	r.gate("a")
	require.NoError(t, q.Submit("cfg", Request{Number: 3, HeadSHA: "a"}))
	require.Eventually(t, r.started("cfg#3@a"), wait, time.Millisecond)
	require.NoError(t, q.Submit("cfg", Request{Number: 3, HeadSHA: "b"}))
	q.Wait()
	calls, cancelled, _, _ := r.snapshot()
	assert.Equal(t, []string{"cfg#3@a", "cfg#3@b"}, calls)
	assert.Equal(t, []string{"cfg#3@a"}, cancelled)
}

// At most N previews run at once, whatever the number of requests.
func TestConcurrencyBound(t *testing.T) {
	r := newRuns()
	q := NewQueue(context.Background(), 2, r.run, r.close)
	var gates []chan struct{}
	for n := range 6 {
		head := fmt.Sprintf("h%d", n)
		gates = append(gates, r.gate(head))
		require.NoError(t, q.Submit("cfg", Request{Number: int64(n + 1), HeadSHA: head}))
	}
	require.Eventually(t, func() bool { c, _, _, _ := r.snapshot(); return len(c) == 2 }, wait, time.Millisecond)
	for _, g := range gates {
		close(g)
	}
	q.Wait()
	calls, _, _, maxRunning := r.snapshot()
	assert.Len(t, calls, 6)
	assert.Equal(t, 2, maxRunning)
}

// Closing a request cancels its render, drops its queued head and
// removes its work area once the render has returned, once.
func TestClosedDropsWork(t *testing.T) {
	r := newRuns()
	q := NewQueue(context.Background(), 1, r.run, r.close)
	r.gate("a")
	require.NoError(t, q.Submit("cfg", Request{Number: 4, HeadSHA: "a"}))
	require.Eventually(t, r.started("cfg#4@a"), wait, time.Millisecond)
	require.NoError(t, q.Submit("cfg", Request{Number: 9, HeadSHA: "queued"}))
	require.NoError(t, q.Submit("cfg", Request{Number: 9, Closed: true}))
	require.NoError(t, q.Submit("cfg", Request{Number: 4, Closed: true}))
	q.Wait()
	calls, cancelled, closed, _ := r.snapshot()
	assert.Equal(t, []string{"cfg#4@a"}, calls, "the queued head of #9 never ran")
	assert.Equal(t, []string{"cfg#4@a"}, cancelled)
	assert.ElementsMatch(t, []string{"cfg#4", "cfg#9"}, closed)

	// A close of a request the queue does not know still removes its
	// work area (left by an earlier run of the process).
	require.NoError(t, q.Submit("cfg", Request{Number: 11, Closed: true}))
	_, _, closed, _ = r.snapshot()
	assert.Contains(t, closed, "cfg#11")
}

// The queue follows at most MaxOpen busy requests; idle ones make room.
func TestMaxOpen(t *testing.T) {
	r := newRuns()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := NewQueue(ctx, 1, r.run, r.close)
	r.gate("busy")
	for n := range MaxOpen {
		require.NoError(t, q.Submit("cfg", Request{Number: int64(n + 1), HeadSHA: "busy"}))
	}
	require.ErrorIs(t, q.Submit("cfg", Request{Number: MaxOpen + 1, HeadSHA: "x"}), ErrTooMany)
	cancel()
	q.Wait()
}
