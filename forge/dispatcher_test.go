package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

func githubReporter(t *testing.T, srv *forgeServer) Reporter {
	t.Helper()
	rep, err := NewGitHub(Config{BaseURL: srv.URL, Repository: "org/cfg", Token: tokenFile(t)})
	require.NoError(t, err)
	return rep
}

func states(reqs []forgeRequest) []string {
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.Body["context"].(string)+"="+r.Body["state"].(string))
	}
	return out
}

func TestDispatcherRetriesInOrderWithBackoff(t *testing.T) {
	ctx := context.Background()
	down := startForge(t, http.StatusServiceUnavailable)
	other := startForge(t, http.StatusCreated)
	clock := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	outbox := NewMemOutbox()
	d := NewDispatcher(outbox, map[string]Reporter{"cfg": githubReporter(t, down), "other": githubReporter(t, other)}, DispatcherOptions{Clock: clock})

	pending := Status{Commit: sha, State: StatePending, Context: "legate/a", Description: "published, waiting for proxies"}
	success := Status{Commit: sha, State: StateSuccess, Context: "legate/b", Description: "all proxies ACKed"}
	require.NoError(t, d.Enqueue(ctx, "cfg", pending))
	require.NoError(t, d.Enqueue(ctx, "cfg", pending), "a duplicate is dropped")
	require.NoError(t, d.Enqueue(ctx, "cfg", success))
	require.NoError(t, d.Enqueue(ctx, "other", pending))
	entries, err := statusQueue{outbox}.list(ctx)
	require.NoError(t, err)
	require.Len(t, entries, 3)

	next, err := d.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, clock.Now().Add(MinBackoff), next)
	assert.Len(t, down.requests(), 1, "the first failure blocks the rest of its target")
	assert.Equal(t, []string{"legate/a=pending"}, states(other.requests()), "other targets go on")

	clock.Step(MinBackoff / 2)
	_, err = d.Flush(ctx)
	require.NoError(t, err)
	assert.Len(t, down.requests(), 1, "no retry before the backoff")

	clock.Step(MinBackoff / 2)
	next, err = d.Flush(ctx)
	require.NoError(t, err)
	assert.Len(t, down.requests(), 2)
	assert.Equal(t, clock.Now().Add(2*MinBackoff), next, "the backoff doubles")

	down.setCode(http.StatusCreated)
	clock.Step(2 * MinBackoff)
	next, err = d.Flush(ctx)
	require.NoError(t, err)
	assert.True(t, next.IsZero())
	assert.Equal(t, []string{"legate/a=pending", "legate/a=pending", "legate/a=pending", "legate/b=success"}, states(down.requests()), "delivered in order once back")
	entries, err = statusQueue{outbox}.list(ctx)
	require.NoError(t, err)
	assert.Empty(t, entries)

	require.NoError(t, d.Enqueue(ctx, "cfg", success))
	_, err = d.Flush(ctx)
	require.NoError(t, err)
	assert.Len(t, down.requests(), 4, "an unchanged status is not posted again")
}

func TestDispatcherDropsPermanentFailures(t *testing.T) {
	ctx := context.Background()
	srv := startForge(t, http.StatusUnprocessableEntity)
	outbox := NewMemOutbox()
	d := NewDispatcher(outbox, map[string]Reporter{"cfg": githubReporter(t, srv)}, DispatcherOptions{Clock: clocktesting.NewFakeClock(time.Time{})})
	require.NoError(t, d.Enqueue(ctx, "cfg", Status{Commit: sha, State: StateFailure, Context: "legate/a"}))
	require.NoError(t, d.Enqueue(ctx, "cfg", Status{Commit: sha, State: StateFailure, Context: "legate/b"}))
	next, err := d.Flush(ctx)
	require.NoError(t, err)
	assert.True(t, next.IsZero())
	assert.Len(t, srv.requests(), 2, "a rejected status does not block the next")
	entries, err := statusQueue{outbox}.list(ctx)
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.Error(t, d.Enqueue(ctx, "unknown", Status{Commit: sha, State: StatePending, Context: "legate/a"}))
}

func TestDispatcherDeliversWhatAnEarlierRunLeft(t *testing.T) {
	ctx := context.Background()
	srv := startForge(t, http.StatusCreated)
	outbox := NewMemOutbox()
	st := Status{Commit: sha, State: StateFailure, Context: "legate/a", Description: "rolled back: token " + token}
	_, err := statusQueue{outbox}.put(ctx, Entry{Target: "cfg", Status: st})
	require.NoError(t, err)

	d := NewDispatcher(outbox, map[string]Reporter{"cfg": githubReporter(t, srv)}, DispatcherOptions{})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done, "Run returns nil when its context ends")
	})
	require.Eventually(t, func() bool { return len(srv.requests()) == 1 }, 10*time.Second, 10*time.Millisecond)
	assert.NotContains(t, srv.requests()[0].Body["description"], token, "scrubbed even when stored by someone else")

	require.NoError(t, d.Enqueue(ctx, "cfg", Status{Commit: sha, State: StateSuccess, Context: "legate/a"}))
	require.Eventually(t, func() bool { return len(srv.requests()) == 2 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"legate/a=failure", "legate/a=success"}, states(srv.requests()))
}

// Run waits for a retry on the Dispatcher's clock, not on the wall clock:
// the retry happens when the clock reaches it, and not before.
func TestDispatcherRunRetriesWhenTheClockSaysSo(t *testing.T) {
	ctx := context.Background()
	srv := startForge(t, http.StatusServiceUnavailable)
	clock := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	d := NewDispatcher(NewMemOutbox(), map[string]Reporter{"cfg": githubReporter(t, srv)}, DispatcherOptions{Clock: clock})
	require.NoError(t, d.Enqueue(ctx, "cfg", Status{Commit: sha, State: StatePending, Context: "legate/a"}))

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})

	require.Eventually(t, func() bool { return len(srv.requests()) == 1 && clock.HasWaiters() },
		10*time.Second, 10*time.Millisecond, "the first attempt fails and Run waits for the retry")
	srv.setCode(http.StatusCreated)
	clock.Step(MinBackoff - time.Millisecond)
	assert.Len(t, srv.requests(), 1, "no retry before the backoff")
	assert.True(t, clock.HasWaiters(), "Run still waits")

	clock.Step(time.Millisecond)
	require.Eventually(t, func() bool { return len(srv.requests()) == 2 }, 10*time.Second, 10*time.Millisecond,
		"the retry is made once the clock reaches it")
	assert.Equal(t, []string{"legate/a=pending", "legate/a=pending"}, states(srv.requests()))
}

// A home whose sources come and go finds reporters through Lookup: the
// statuses of a target not known yet (right after a restart) wait with
// backoff and are delivered once it is, those of a target gone for good
// are dropped, and nothing is posted twice.
func TestDispatcherLooksUpReportersOfChangingTargets(t *testing.T) {
	ctx := context.Background()
	srv := startForge(t, http.StatusCreated)
	clock := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	known := map[string]Reporter{}
	lookup := func(target string) (Reporter, error) {
		switch rep, ok := known[target]; {
		case ok:
			return rep, nil
		case target == "gone":
			return nil, fmt.Errorf("EnvoySource deleted: %w", ErrUnknownTarget)
		default:
			return nil, errors.New("not reconciled yet")
		}
	}
	outbox := NewMemOutbox()
	d := NewDispatcher(outbox, nil, DispatcherOptions{Clock: clock, Lookup: lookup})
	require.NoError(t, d.Enqueue(ctx, "later", Status{Commit: sha, State: StatePending, Context: "legate/a"}))
	assert.ErrorIs(t, d.Enqueue(ctx, "gone", Status{Commit: sha, State: StatePending, Context: "legate/a"}), ErrUnknownTarget)
	_, err := statusQueue{outbox}.put(ctx, Entry{Target: "gone", Status: Status{Commit: sha, State: StateSuccess, Context: "legate/b"}})
	require.NoError(t, err)

	next, err := d.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, clock.Now().Add(MinBackoff), next, "the unknown target is retried")
	entries, err := statusQueue{outbox}.list(ctx)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the gone target's status is dropped, the other kept")
	assert.Equal(t, "later", entries[0].Target)

	known["later"] = githubReporter(t, srv)
	clock.Step(MinBackoff)
	_, err = d.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"legate/a=pending"}, states(srv.requests()))
	_, err = d.Flush(ctx)
	require.NoError(t, err)
	assert.Len(t, srv.requests(), 1, "delivered once")
}

func TestBackoff(t *testing.T) {
	assert.Equal(t, MinBackoff, backoff(0, MaxBackoff))
	assert.Equal(t, 2*MinBackoff, backoff(1, MaxBackoff))
	assert.Equal(t, 8*MinBackoff, backoff(3, MaxBackoff))
	assert.Equal(t, MaxBackoff, backoff(100, MaxBackoff))
	assert.Equal(t, 10*time.Second, backoff(100, 10*time.Second), "a lower cap holds")
	assert.Equal(t, 8*time.Second, backoff(3, 10*time.Second))
}
