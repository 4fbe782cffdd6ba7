package standalone

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legate-dev/legate/pipeline/nodestate"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/statuspage"
)

// TestUnconfiguredNodeIDsAreListedWithAHint connects a proxy whose
// bootstrap misspells its node ID: the API, the node's own endpoint and
// the page list it as Unconfigured and suggest the configured ID.
func TestUnconfiguredNodeIDsAreListedWithAHint(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "edge",
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	require.Eventually(t, func() bool { _, ok := s.view(t, "edge"); return ok }, 30*time.Second, 10*time.Millisecond)

	startProxy(t, s.XDSAddr(), "egde", "pod-typo", "")
	var v statuspage.NodeView
	require.Eventually(t, func() bool {
		var ok bool
		v, ok = s.view(t, "egde")
		return ok && len(v.Proxies) == 1
	}, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, nodestate.Unconfigured, v.State)
	assert.Equal(t, []string{"edge"}, v.Closest)
	assert.Equal(t, "pod-typo", v.Proxies[0].Proxy)

	resp, err := http.Get("http://" + s.HTTPAddr() + "/api/v1/nodes/egde")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var one map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&one))
	assert.Equal(t, "Unconfigured", one["state"])
	assert.Equal(t, []any{"edge"}, one["closest"])

	code, page := getText(t, "http://"+s.HTTPAddr()+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `data-node="egde" data-state="Unconfigured"`)
	assert.Contains(t, page, "did you mean edge?")
}
