package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
)

// namespaceOf is the tenant of a source named "NAMESPACE/NAME".
func namespaceOf(source string) string {
	ns, _, _ := strings.Cut(source, "/")
	return ns
}

// restart closes h's store and starts a new engine and pipeline on it, as
// a restarted home (or a new leader) does.
func restart(t *testing.T, h *harness, dir string) *harness {
	t.Helper()
	return harnessOn(t, dir, namespaceOf)
}

// The owner of a node is stored: after a restart, the source of another
// tenant that renders first does not take it, and learns nothing of the
// owner.
func TestOwnershipSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	h := harnessOn(t, dir, namespaceOf)
	require.Equal(t, []string{"edge"}, h.sync(tree("team-c/mine", "c1", "a", "edge")).Nodes)
	served := h.published("edge").Hash
	h.closeStore()

	h = restart(t, h, dir)
	st := h.sync(tree("team-b/squat", "b1", "b", "edge"))
	assert.Empty(t, st.Nodes, "a node another tenant owns is not applied")
	require.Len(t, st.Conflicts, 1)
	c := st.Conflicts[0]
	assert.True(t, c.Foreign)
	assert.Empty(t, c.Owner, "the owner of another tenant is not named")
	msg := c.Message("team-b/squat")
	assert.Contains(t, msg, "another namespace")
	assert.NotContains(t, msg, "team-c")
	assert.Equal(t, served, h.published("edge").Hash, "the owner's content stays served")
	assert.Equal(t, "team-c/mine", h.p.Owner("edge"))

	// The owner sees no contest of another tenant.
	st = h.sync(tree("team-c/mine", "c2", "a2", "edge"))
	assert.Empty(t, st.Conflicts)
	assert.Equal(t, []string{"edge"}, st.Nodes)
	assert.Equal(t, "c2", h.published("edge").Commit)
}

// A removed source's nodes stop being served and are released: the
// tenant that was refused takes the node with a history of its own.
func TestRemovedSourceReleasesItsNodes(t *testing.T) {
	h := harnessOn(t, t.TempDir(), namespaceOf)
	h.sync(tree("team-a/pay", "a1", "a", "pay-edge"))
	h.sync(tree("team-b/pay", "b1", "b", "pay-edge"))
	require.Equal(t, "team-a/pay", h.p.Owner("pay-edge"))

	assert.Equal(t, []string{"pay-edge"}, h.p.Remove(context.Background(), "team-a/pay"))
	assert.Empty(t, h.p.Owner("pay-edge"), "a removed source claims nothing")
	assert.Equal(t, revisions.Ownership{}, h.e.Ownership("pay-edge"), "nor does the stored record")
	h.mu.Lock()
	assert.Contains(t, h.asked, "team-b/pay", "the refused source is asked to render again")
	h.mu.Unlock()

	st := h.sync(tree("team-b/pay", "b1", "b", "pay-edge"))
	assert.Equal(t, []string{"pay-edge"}, st.Nodes)
	n, ok := h.e.Node("pay-edge")
	require.True(t, ok)
	require.Len(t, n.History, 1, "nothing of team-a's history is kept")
	assert.Equal(t, "b1", n.History[0].Commit)
}

// A node its owner stops rendering is released in the store too: after
// a restart another tenant takes it, with a history of its own.
func TestReleaseIsStored(t *testing.T) {
	dir := t.TempDir()
	h := harnessOn(t, dir, namespaceOf)
	h.sync(tree("team-a/pay", "a1", "a", "pay-edge", "other"))
	h.sync(tree("team-a/pay", "a2", "a", "other"))
	assert.Empty(t, h.e.Ownership("pay-edge").Owner)
	assert.Equal(t, "team-a/pay", h.e.Ownership("pay-edge").Last)
	h.closeStore()

	h = restart(t, h, dir)
	st := h.sync(tree("team-b/pay", "b1", "b", "pay-edge"))
	assert.Equal(t, []string{"pay-edge"}, st.Nodes)
	n, ok := h.e.Node("pay-edge")
	require.True(t, ok)
	require.Len(t, n.History, 1, "team-a's revisions are gone")
	assert.Equal(t, "b1", n.History[0].Commit)
	assert.Equal(t, "team-b/pay", h.e.Ownership("pay-edge").Owner)
}

// Within one tenant, a node released by one source and taken by another
// keeps its history (one team, one history), and contests name both.
func TestSameTenantKeepsHistory(t *testing.T) {
	h := harnessOn(t, t.TempDir(), namespaceOf)
	h.sync(tree("team-a/one", "a1", "a", "edge"))
	st := h.sync(tree("team-a/two", "t1", "t", "edge"))
	require.Len(t, st.Conflicts, 1)
	assert.Equal(t, "team-a/one", st.Conflicts[0].Owner)
	assert.False(t, st.Conflicts[0].Foreign)
	h.sync(tree("team-a/one", "a2", "a", "other"))
	h.sync(tree("team-a/two", "t1", "t", "edge"))
	n, ok := h.e.Node("edge")
	require.True(t, ok)
	assert.Len(t, n.History, 2)
}
