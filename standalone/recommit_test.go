package standalone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/statuspage"
)

// TestCommitOutsideThePathMovesTheRevision checks that a commit changing
// nothing under the source's path is not rendered again but is recorded on
// the served revision and reported like any other commit.
func TestCommitOutsideThePathMovesTheRevision(t *testing.T) {
	repo := newLocalRepo(t)
	first := repo.commit("a")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "n",
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	outcomes := make(chan revisions.Outcome, 16)
	s.engine.Subscribe(func(o revisions.Outcome) { outcomes <- o })
	runServer(t, s)
	published := func() string {
		n, ok := s.engine.Node("n")
		if !ok || n.Published == nil {
			return ""
		}
		return n.Published.Commit
	}
	require.Eventually(t, func() bool { return published() == first }, 30*time.Second, 10*time.Millisecond)
	hash := (<-outcomes).Hash

	require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "README.md"), []byte("docs\n"), 0o600))
	repo.git("add", "-A")
	repo.git("commit", "-q", "-m", "docs")
	second := repo.git("rev-parse", "HEAD")
	require.True(t, s.Trigger("cfg"))
	require.Eventually(t, func() bool { return published() == second }, 30*time.Second, 10*time.Millisecond)
	o := <-outcomes
	assert.Equal(t, second, o.Origin.Commit, "the new commit gets an outcome")
	assert.Equal(t, hash, o.Hash, "of the same revision")
	n, _ := s.engine.Node("n")
	assert.Len(t, n.History, 1, "no new revision")
}

// TestAppliedRevisionTrailsAnInvalidCommit checks the source status keeps
// the last applied revision apart from the last fetched one, as Flux's
// lastAppliedRevision and lastAttemptedRevision do.
func TestAppliedRevisionTrailsAnInvalidCommit(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "n",
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	var good statuspage.Source
	require.Eventually(t, func() bool {
		good = s.Sources()[0]
		return good.AppliedRevision != ""
	}, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, good.Revision, good.AppliedRevision)

	require.NoError(t, os.WriteFile(filepath.Join(repo.dir, "cluster.yaml"), []byte(strings.ReplaceAll(clusterDoc, "%s", "b")+"bogus: 1\n"), 0o600))
	repo.git("commit", "-q", "-am", "broken")
	broken := repo.git("rev-parse", "HEAD")
	require.True(t, s.Trigger("cfg"))
	var st statuspage.Source
	require.Eventually(t, func() bool {
		// Commit moves at the fetch, LastError once the render is judged.
		st = s.Sources()[0]
		return st.Commit == broken && st.LastError != ""
	}, 30*time.Second, 10*time.Millisecond)
	assert.Contains(t, st.LastError, "validation failed")
	assert.Contains(t, st.Revision, broken)
	assert.Equal(t, good.AppliedRevision, st.AppliedRevision, "the invalid commit was not applied")

	fixed := repo.commit("c")
	require.True(t, s.Trigger("cfg"))
	require.Eventually(t, func() bool { return strings.Contains(s.Sources()[0].AppliedRevision, fixed) }, 30*time.Second, 10*time.Millisecond)
	assert.Empty(t, s.Sources()[0].LastError)
}
