package standalone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/serveconfig"
)

// contest is a server following two repositories, "one" and "two", that
// both render node "shared", once one of them serves it.
type contest struct {
	s       *Server
	repos   map[string]*localRepo
	commits map[string]string
	// owner serves the node; other was refused it.
	owner, other string
}

func newContest(t *testing.T) *contest {
	t.Helper()
	c := &contest{repos: map[string]*localRepo{"one": newLocalRepo(t), "two": newLocalRepo(t)}}
	c.commits = map[string]string{"one": c.repos["one"].commit("a"), "two": c.repos["two"].commit("b")}
	c.s = newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "shared",
		Sources: []serveconfig.SourceConfig{
			{Name: "one", Git: &serveconfig.GitSource{URL: c.repos["one"].dir}, Interval: serveconfig.Duration{Duration: time.Hour}},
			{Name: "two", Git: &serveconfig.GitSource{URL: c.repos["two"].dir}, Interval: serveconfig.Duration{Duration: time.Hour}},
		},
	}, Options{})
	runServer(t, c.s)
	require.Eventually(t, func() bool {
		n, ok := c.s.engine.Node("shared")
		if !ok || n.Published == nil {
			return false
		}
		c.owner = n.Published.Source
		c.other = map[string]string{"one": "two", "two": "one"}[c.owner]
		return strings.Contains(c.errs()[c.other], `node "shared" is already rendered by source "`+c.owner+`"`)
	}, 30*time.Second, 10*time.Millisecond, "the refused source reports the conflict: %v", c.errs())
	return c
}

// errs is every source's last error by name.
func (c *contest) errs() map[string]string {
	out := map[string]string{}
	for _, st := range c.s.Sources() {
		out[st.Name] = st.LastError
	}
	return out
}

// TestNodeClaimedByTwoSources checks that a node ID rendered by two
// sources is served from one and reported as an error on both, whatever
// source claimed it first.
func TestNodeClaimedByTwoSources(t *testing.T) {
	c := newContest(t)
	s, owner, other, errs := c.s, c.owner, c.other, c.errs
	require.Eventually(t, func() bool {
		return strings.Contains(errs()[owner], `node "shared" is also claimed by source "`+other+`"`)
	}, 30*time.Second, 10*time.Millisecond, "the owner reports the conflict too: %v", errs())

	// The refused source renders again (a new commit, so the render is not
	// skipped as unchanged); once that pass has finished, the node must
	// still be the owner's.
	newer := c.repos[other].commit("c")
	asked := time.Now()
	require.True(t, s.Trigger(other))
	require.Eventually(t, func() bool {
		for _, st := range s.Sources() {
			if st.Name == other {
				return st.Commit == newer && st.LastAttempt != nil && st.LastAttempt.After(asked)
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "the refused source rendered its new commit")
	n, ok := s.engine.Node("shared")
	require.True(t, ok)
	assert.Equal(t, c.commits[owner], n.Published.Commit, "the node stays with the source that claimed it first")
	assert.Len(t, n.History, 1, "nothing of the refused source reached the node")
	assert.Contains(t, errs()[other], `node "shared" is already rendered by source "`+owner+`"`, "the refused source still reports the conflict")
	assert.Contains(t, errs()[owner], `also claimed by source "`+other+`"`, "the owner keeps reporting the conflict")
}

// TestNodeMovesToTheOtherSource checks that when the source serving a node
// stops rendering it (its configuration moved to another repository), the
// source that was refused the node takes it over without a restart.
func TestNodeMovesToTheOtherSource(t *testing.T) {
	c := newContest(t)
	s, repos, owner, other, errs := c.s, c.repos, c.owner, c.other, c.errs

	// The owner's repository now configures another node only.
	repos[owner].git("mv", "cluster.yaml", "moved.yaml")
	require.NoError(t, os.WriteFile(filepath.Join(repos[owner].dir, "legate.yaml"), []byte("nodeIDs: [elsewhere]\n"), 0o600))
	repos[owner].git("add", "-A")
	repos[owner].git("commit", "-q", "-m", "move node shared away")
	require.True(t, s.Trigger(owner))

	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("shared")
		return ok && n.Published != nil && n.Published.Source == other
	}, 30*time.Second, 10*time.Millisecond, "the other source takes the node over")
	n, _ := s.engine.Node("shared")
	assert.Equal(t, c.commits[other], n.Published.Commit)
	_, ok := s.engine.Node("elsewhere")
	assert.True(t, ok, "the moved configuration serves its new node")
	require.Eventually(t, func() bool {
		e := errs()
		return e[owner] == "" && e[other] == ""
	}, 30*time.Second, 10*time.Millisecond, "no conflict is left on either source: %v", errs())
}
