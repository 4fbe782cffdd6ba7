package revisions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
)

// The source that applies to a node owns it: the record stores it (a
// restart reads it back), every publication carries it, Release by
// another source changes nothing, Release by the owner and Forget clear
// it, and the newest revision's source stays known as Last.
func TestOwnershipIsStoredAndPublished(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, revisions.Options{})
	h.apply(config("l1", "c1"), "c1")
	assert.Equal(t, revisions.Ownership{Owner: "config", Last: "config"}, h.e.Ownership(node))
	assert.Equal(t, "config", h.pub.last(t).Owner, "the publication names its owner")
	assert.Equal(t, map[string]string{node: "config"}, h.e.Owners())

	h.restart(revisions.Options{})
	assert.Equal(t, "config", h.e.Ownership(node).Owner, "the owner is read back from the store")
	assert.Equal(t, "config", h.pub.last(t).Owner, "and served with the restored publication")

	require.NoError(t, h.e.Release(ctx, node, "someone-else"))
	assert.Equal(t, "config", h.e.Ownership(node).Owner, "only the owner releases")
	require.NoError(t, h.e.Release(ctx, node, "config"))
	assert.Equal(t, revisions.Ownership{Last: "config"}, h.e.Ownership(node))
	h.restart(revisions.Options{})
	assert.Empty(t, h.e.Ownership(node).Owner, "the release is stored")
	assert.Empty(t, h.e.Owners())

	// Another source takes the node: the content already served is
	// published again under the new owner.
	before := h.pub.count()
	other := gitOrigin("c2")
	other.Source = "other"
	require.NoError(t, h.e.Apply(ctx, node, config("l1", "c1"), other))
	assert.Equal(t, before+1, h.pub.count(), "the same content is published again for its new owner")
	assert.Equal(t, "other", h.pub.last(t).Owner)

	require.NoError(t, h.e.Forget(ctx, node))
	assert.Equal(t, revisions.Ownership{}, h.e.Ownership(node), "a forgotten node belongs to nobody")
}
