package standalone

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/serveconfig"
	"github.com/legate-dev/legate/sources"
)

// The untaint call needs the admin token, expands a unique hash prefix and
// refuses an ambiguous one rather than picking a revision.
func TestUntaintResolvesPrefixesAndNeedsTheToken(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "other",
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	require.Eventually(t, s.Ready, 10*time.Second, 10*time.Millisecond)

	cluster, err := proto.Marshal(&clusterv3.Cluster{Name: "backend"})
	require.NoError(t, err)
	hashes := []string{"abcd1" + strings.Repeat("0", 59), "abcd2" + strings.Repeat("0", 59)}
	for i, h := range hashes {
		cfg := &render.NodeConfig{NodeID: "edge", Hash: h, Types: map[string]render.TypeSet{
			resourcev3.ClusterType: {Hash: h, Resources: []render.Resource{{Name: "backend", Body: cluster}}},
		}}
		require.NoError(t, s.engine.Apply(context.Background(), "edge", cfg, sources.Origin{Kind: sources.KindGit, Source: "cfg", Commit: strings.Repeat(string(rune('1'+i)), 40)}))
	}
	untaint := func(prefix, token string) (int, string) {
		req, err := http.NewRequest(http.MethodDelete, "http://"+s.HTTPAddr()+"/api/v1/nodes/edge/revisions/"+prefix+"/taint", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, _ := untaint("abcd1", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no token")
	code, _ = untaint("abcd1", "not-the-token")
	assert.Equal(t, http.StatusUnauthorized, code, "wrong token")
	code, body := untaint("abcd", s.token)
	assert.Equal(t, http.StatusNotFound, code, "ambiguous prefix: %s", body)
	code, body = untaint("abcd2", s.token)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "not tainted")
	assert.Contains(t, body, hashes[1], "the prefix was expanded to the full hash")
}

// --taint-threshold reaches the engine: with 0.5, one of two proxies
// rejecting the served revision taints it (with the default, 1, it would
// only degrade the node).
func TestTaintThresholdReachesTheEngine(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, serveconfig.Config{
		StateDir: t.TempDir(), DefaultNode: "other", TaintThreshold: 0.5,
		Sources: []serveconfig.SourceConfig{{Name: "cfg", Git: &serveconfig.GitSource{URL: repo.dir}, Interval: serveconfig.Duration{Duration: time.Hour}}},
	}, Options{})
	runServer(t, s)
	require.Eventually(t, s.Ready, 10*time.Second, 10*time.Millisecond)

	cluster, err := proto.Marshal(&clusterv3.Cluster{Name: "backend"})
	require.NoError(t, err)
	h := strings.Repeat("cd", 32)
	cfg := &render.NodeConfig{NodeID: "edge", Hash: h, Types: map[string]render.TypeSet{
		resourcev3.ClusterType: {Hash: h, Resources: []render.Resource{{Name: "backend", Body: cluster}}},
	}}
	require.NoError(t, s.engine.Apply(context.Background(), "edge", cfg, sources.Origin{Kind: sources.KindGit, Source: "cfg", Commit: strings.Repeat("1", 40)}))
	st, ok := s.engine.Node("edge")
	require.True(t, ok)
	require.NotNil(t, st.Published)
	version := st.Published.Version
	for _, ev := range []revisions.ProxyEvent{
		{Kind: revisions.ProxyConnected, Node: "edge", Proxy: "pod-a"},
		{Kind: revisions.ProxyConnected, Node: "edge", Proxy: "pod-b"},
		{Kind: revisions.ProxyACK, Node: "edge", Proxy: "pod-a", TypeURL: resourcev3.ClusterType, SnapshotVersion: version},
		{Kind: revisions.ProxyNACK, Node: "edge", Proxy: "pod-b", TypeURL: resourcev3.ClusterType, SnapshotVersion: version, Error: "bad cluster"},
	} {
		s.engine.ObserveProxy(ev)
	}
	require.Eventually(t, func() bool {
		st, _ := s.engine.Node("edge")
		return len(st.History) == 1 && st.History[0].Tainted
	}, 20*time.Second, 10*time.Millisecond, "one of two rejecting reaches a threshold of 0.5")
}
