package revisions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
)

// A follower that cannot serve the leader's publication yet (a Secret it
// has not read) tries again on every tick, however often it fails, until
// it serves it; meanwhile the record counts as not read, so the
// controller's reconciler reads it again too.
func TestFollowerKeepsRetryingAPublicationThatFailed(t *testing.T) {
	ctx := context.Background()
	st, clock, leader, follower := published(t)
	want := leader.pub.last(t)
	rec := st.node(node).Record

	failures := 0
	follower.pub.refuse = func(string, revisions.Publication) error {
		if failures < 3 {
			failures++
			return revisions.NotReady(errors.New(`secret "cert" not read yet`))
		}
		return nil
	}
	require.Error(t, follower.e.Mirror(st.node(node)), "the first attempt fails")
	assert.Equal(t, 0, follower.pub.count())
	assert.False(t, follower.e.Mirrored(node, rec.Revision), "a record not served yet is read again")

	follower.e.Tick(ctx, clock.Step(time.Second))
	assert.Equal(t, 2, failures, "the tick tried again")
	assert.Equal(t, 0, follower.pub.count())
	assert.False(t, follower.e.Mirrored(node, rec.Revision))

	follower.e.Tick(ctx, clock.Step(time.Second))
	assert.Equal(t, 3, failures, "and again after failing twice")
	follower.e.Tick(ctx, clock.Step(time.Second))
	require.Equal(t, 1, follower.pub.count(), "served once it can be")
	assert.Equal(t, want, follower.pub.last(t), "as the leader published it")
	assert.True(t, follower.e.Mirrored(node, rec.Revision))

	follower.e.Tick(ctx, clock.Step(time.Second))
	assert.Equal(t, 1, follower.pub.count(), "served: not tried again")
}

// The same record handed to Mirror again while it is pending is tried
// again, not skipped as already read.
func TestFollowerMirrorRetriesAPendingRecord(t *testing.T) {
	st, _, leader, follower := published(t)

	ready := false
	follower.pub.refuse = func(string, revisions.Publication) error {
		if !ready {
			return revisions.NotReady(errors.New("not yet"))
		}
		return nil
	}
	require.Error(t, follower.e.Mirror(st.node(node)))
	require.Error(t, follower.e.Mirror(st.node(node)), "tried again, failed again")
	ready = true
	require.NoError(t, follower.e.Mirror(st.node(node)))
	assert.Equal(t, leader.pub.last(t), follower.pub.last(t))
}

// published is a leader and a follower on one store, the leader having
// published a revision the follower has not read yet.
func published(t *testing.T) (*sharedStore, *fakeClock, *replica, *replica) {
	t.Helper()
	st := newSharedStore()
	clock := newFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	leader, follower := newReplica(t, st, clock, true), newReplica(t, st, clock, false)
	require.NoError(t, leader.e.Apply(context.Background(), node, config("l1", "c1"), gitOrigin("sha1")))
	return st, clock, leader, follower
}
