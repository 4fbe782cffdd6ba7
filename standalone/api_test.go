package standalone

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/revisions"
	"github.com/legate-dev/legate/sources"
)

// TestRevisionViewNeverShowsKeyMaterial serves a revision holding a
// cluster and an SDS secret with inline key material: GET
// /api/v1/nodes/{node}/revisions/served shows the cluster as Envoy JSON
// and the secret by name only.
func TestRevisionViewNeverShowsKeyMaterial(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, Config{
		StateDir: t.TempDir(), DefaultNode: "other",
		Sources: []SourceConfig{{Name: "cfg", Git: &GitSource{URL: repo.dir}, Interval: Duration{time.Hour}}},
	}, Options{})
	runServer(t, s)
	require.Eventually(t, s.Ready, 10*time.Second, 10*time.Millisecond)

	const key = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END PRIVATE KEY-----\n"
	secret, err := proto.Marshal(&tlsv3.Secret{Name: "edge-tls", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		PrivateKey: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: key}},
	}}})
	require.NoError(t, err)
	// A cluster with key material inlined in its TLS context, against the
	// rules: the view shows the context without the key.
	upstream, err := anypb.New(&tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: "/certs/tls.crt"}},
		PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: key}},
	}}}})
	require.NoError(t, err)
	cluster, err := proto.Marshal(&clusterv3.Cluster{
		Name: "backend", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: upstream}},
	})
	require.NoError(t, err)
	cfg := &render.NodeConfig{NodeID: "edge", Hash: strings.Repeat("ab", 32), Types: map[string]render.TypeSet{
		resourcev3.ClusterType: {Hash: "c", Resources: []render.Resource{{Name: "backend", Body: cluster}}},
		resourcev3.SecretType:  {Hash: "s", Resources: []render.Resource{{Name: "edge-tls", Body: secret}}},
	}}
	require.NoError(t, s.engine.Apply(context.Background(), "edge", cfg, sources.Origin{Kind: sources.KindGit, Source: "cfg", Commit: strings.Repeat("1", 40)}))

	resp, err := http.Get("http://" + s.HTTPAddr() + "/api/v1/nodes/edge/revisions/served")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.NotContains(t, string(body), "c2VjcmV0LWtleS1tYXRlcmlhbA")
	assert.NotContains(t, string(body), "PRIVATE KEY")
	var v RevisionView
	require.NoError(t, json.Unmarshal(body, &v))
	assert.True(t, v.Served)
	require.Len(t, v.Resources, 2)
	assert.Equal(t, "Cluster", v.Resources[0].Type)
	assert.Equal(t, "backend", v.Resources[0].Name)
	assert.JSONEq(t, `{"name":"backend","type":"STATIC","transportSocket":{"name":"envoy.transport_sockets.tls","typedConfig":{
		"@type":"type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
		"commonTlsContext":{"tlsCertificates":[{"certificateChain":{"filename":"/certs/tls.crt"}}]}}}}`, string(v.Resources[0].Value))
	assert.Equal(t, ResourceView{Type: "Secret", Name: "edge-tls", Redacted: true}, v.Resources[1])

	resp, err = http.Get("http://" + s.HTTPAddr() + "/api/v1/nodes/edge/revisions/ffff")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, string(body), `no revision \"ffff\" of node \"edge\"`)
}

// The untaint call needs the admin token, expands a unique hash prefix and
// refuses an ambiguous one rather than picking a revision.
func TestUntaintResolvesPrefixesAndNeedsTheToken(t *testing.T) {
	repo := newLocalRepo(t)
	repo.commit("a")
	s := newServer(t, Config{
		StateDir: t.TempDir(), DefaultNode: "other",
		Sources: []SourceConfig{{Name: "cfg", Git: &GitSource{URL: repo.dir}, Interval: Duration{time.Hour}}},
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
	assert.Equal(t, hashes[0], s.resolveRevision("edge", "abcd1"))
	assert.Equal(t, "abcd", s.resolveRevision("edge", "abcd"), "an ambiguous prefix is not expanded")
	assert.Equal(t, "ffff", s.resolveRevision("edge", "ffff"))

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
	s := newServer(t, Config{
		StateDir: t.TempDir(), DefaultNode: "other", TaintThreshold: 0.5,
		Sources: []SourceConfig{{Name: "cfg", Git: &GitSource{URL: repo.dir}, Interval: Duration{time.Hour}}},
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
