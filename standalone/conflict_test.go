package standalone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNodeClaimedByTwoSources checks that a node ID rendered by two
// sources is served from one and reported as an error on both, whatever
// source claimed it first.
func TestNodeClaimedByTwoSources(t *testing.T) {
	one, two := newLocalRepo(t), newLocalRepo(t)
	commits := map[string]string{"one": one.commit("a"), "two": two.commit("b")}
	s := newServer(t, Config{
		StateDir: t.TempDir(), DefaultNode: "shared",
		Sources: []SourceConfig{
			{Name: "one", Git: &GitSource{URL: one.dir}, Interval: Duration{time.Hour}},
			{Name: "two", Git: &GitSource{URL: two.dir}, Interval: Duration{time.Hour}},
		},
	}, Options{})
	runServer(t, s)
	errs := func() map[string]string {
		out := map[string]string{}
		for _, st := range s.Sources() {
			out[st.Name] = st.LastError
		}
		return out
	}
	var owner, other string
	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("shared")
		if !ok || n.Published == nil {
			return false
		}
		owner = n.Published.Source
		other = map[string]string{"one": "two", "two": "one"}[owner]
		e := errs()
		return strings.Contains(e[owner], `node "shared" is also claimed by source "`+other+`"`) &&
			strings.Contains(e[other], `node "shared" is already rendered by source "`+owner+`"`)
	}, 30*time.Second, 10*time.Millisecond, "both sources report the conflict: %v", errs())

	require.True(t, s.Trigger(owner))
	require.True(t, s.Trigger(other))
	n, ok := s.engine.Node("shared")
	require.True(t, ok)
	assert.Equal(t, commits[owner], n.Published.Commit, "the node stays with the source that claimed it first")
	assert.Contains(t, errs()[owner], `also claimed by source "`+other+`"`, "the owner keeps reporting the conflict")
}

// TestNodeMovesToTheOtherSource checks that when the source serving a node
// stops rendering it (its configuration moved to another repository), the
// source that was refused the node takes it over without a restart.
func TestNodeMovesToTheOtherSource(t *testing.T) {
	repos := map[string]*localRepo{"one": newLocalRepo(t), "two": newLocalRepo(t)}
	commits := map[string]string{"one": repos["one"].commit("a"), "two": repos["two"].commit("b")}
	s := newServer(t, Config{
		StateDir: t.TempDir(), DefaultNode: "shared",
		Sources: []SourceConfig{
			{Name: "one", Git: &GitSource{URL: repos["one"].dir}, Interval: Duration{time.Hour}},
			{Name: "two", Git: &GitSource{URL: repos["two"].dir}, Interval: Duration{time.Hour}},
		},
	}, Options{})
	runServer(t, s)
	errs := func() map[string]string {
		out := map[string]string{}
		for _, st := range s.Sources() {
			out[st.Name] = st.LastError
		}
		return out
	}
	var owner, other string
	require.Eventually(t, func() bool {
		n, ok := s.engine.Node("shared")
		if !ok || n.Published == nil {
			return false
		}
		owner = n.Published.Source
		other = map[string]string{"one": "two", "two": "one"}[owner]
		return strings.Contains(errs()[other], `node "shared" is already rendered by source "`+owner+`"`)
	}, 30*time.Second, 10*time.Millisecond, "the conflict is reported: %v", errs())

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
	assert.Equal(t, commits[other], n.Published.Commit)
	_, ok := s.engine.Node("elsewhere")
	assert.True(t, ok, "the moved configuration serves its new node")
	require.Eventually(t, func() bool {
		e := errs()
		return e[owner] == "" && e[other] == ""
	}, 30*time.Second, 10*time.Millisecond, "no conflict is left on either source: %v", errs())
}
