// Package outboxtest checks that a revisions.Outbox keeps its promises:
// order, replace-by-key, idempotent delete, and persistence across a
// reopen. Every store's tests run it.
package outboxtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
)

// Run exercises the outbox that open returns; open is called again to
// reopen the same storage (closing the previous one if it must).
func Run(t *testing.T, open func(t *testing.T) revisions.Outbox) {
	ctx := context.Background()
	s := open(t)

	seqA, err := s.OutboxPut(ctx, "sha1/edge", []byte("pending"))
	require.NoError(t, err)
	_, err = s.OutboxPut(ctx, "sha2/edge", []byte("pending"))
	require.NoError(t, err)
	seqA2, err := s.OutboxPut(ctx, "sha1/edge", []byte("success"))
	require.NoError(t, err)
	assert.Greater(t, seqA2, seqA)

	list, err := s.OutboxList(ctx, 0)
	require.NoError(t, err)
	require.Len(t, list, 2, "the same key replaces")
	assert.Equal(t, "sha2/edge", list[0].Key, "the replaced entry moves to the end")
	assert.Equal(t, "sha1/edge", list[1].Key)
	assert.Equal(t, []byte("success"), list[1].Value)

	require.NoError(t, s.OutboxDelete(ctx, seqA), "deleting a replaced entry is a no-op")
	list, err = s.OutboxList(ctx, 1)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "sha2/edge", list[0].Key)

	require.NoError(t, s.OutboxDelete(ctx, list[0].Seq))
	s = open(t)
	list, err = s.OutboxList(ctx, 0)
	require.NoError(t, err)
	require.Len(t, list, 1, "the outbox persists")
	assert.Equal(t, seqA2, list[0].Seq)

	// A key whose entry was delivered can be queued again.
	require.NoError(t, s.OutboxDelete(ctx, seqA2))
	seqB, err := s.OutboxPut(ctx, "sha1/edge", []byte("failure"))
	require.NoError(t, err)
	assert.Greater(t, seqB, seqA2, "sequence numbers keep growing across a reopen")
	list, err = s.OutboxList(ctx, 0)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, []byte("failure"), list[0].Value)
}
