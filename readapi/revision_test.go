package readapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/legate-dev/legate/readapi"
	"github.com/legate-dev/legate/render"
	"github.com/legate-dev/legate/sources"
)

// TestRevisionViewNeverShowsKeyMaterial serves a revision holding a
// cluster and an SDS secret with inline key material: GET
// /api/v1/nodes/{node}/revisions/served shows the cluster as Envoy JSON
// and the secret by name only.
func TestRevisionViewNeverShowsKeyMaterial(t *testing.T) {
	api, e := newAPI(t, homes[1], nil)
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
	require.NoError(t, e.Apply(context.Background(), "edge", cfg, sources.Origin{Kind: sources.KindGit, Source: "cfg", Commit: strings.Repeat("1", 40)}))

	rec := do(api, http.MethodGet, "/api/v1/nodes/edge/revisions/served", "127.0.0.1", nil)
	body := rec.Body.Bytes()
	require.Equal(t, http.StatusOK, rec.Code, "%s", body)
	assert.NotContains(t, string(body), "c2VjcmV0LWtleS1tYXRlcmlhbA")
	assert.NotContains(t, string(body), "PRIVATE KEY")
	var v readapi.RevisionView
	require.NoError(t, json.Unmarshal(body, &v))
	assert.True(t, v.Served)
	require.Len(t, v.Resources, 2)
	assert.Equal(t, "Cluster", v.Resources[0].Type)
	assert.Equal(t, "backend", v.Resources[0].Name)
	assert.JSONEq(t, `{"name":"backend","type":"STATIC","transportSocket":{"name":"envoy.transport_sockets.tls","typedConfig":{
		"@type":"type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
		"commonTlsContext":{"tlsCertificates":[{"certificateChain":{"filename":"/certs/tls.crt"}}]}}}}`, string(v.Resources[0].Value))
	assert.Equal(t, readapi.ResourceView{Type: "Secret", Name: "edge-tls", Redacted: true}, v.Resources[1])

	rec = do(api, http.MethodGet, "/api/v1/nodes/edge/revisions/ffff", "127.0.0.1", nil)
	assert.Equal(t, http.StatusNotFound, rec.Code)
	assert.Contains(t, rec.Body.String(), `no revision \"ffff\" of node \"edge\"`)
}

// A unique prefix of a hash in the node's history is expanded to the
// hash; an ambiguous or unknown one, or one of an unknown node, is
// returned as given.
func TestResolveRevisionExpandsUniquePrefixes(t *testing.T) {
	e := newEngine(t)
	hashes := []string{"abcd1" + strings.Repeat("0", 59), "abcd2" + strings.Repeat("0", 59)}
	for i, h := range hashes {
		applyCluster(t, e, "edge", h, strings.Repeat(string(rune('1'+i)), 40))
	}
	for prefix, want := range map[string]string{
		"abcd1":   hashes[0],
		hashes[1]: hashes[1],
		"abcd":    "abcd", // ambiguous
		"ffff":    "ffff",
		"":        "",
	} {
		assert.Equal(t, want, readapi.ResolveRevision(e, "edge", prefix), prefix)
	}
	assert.Equal(t, "abcd1", readapi.ResolveRevision(e, "nope", "abcd1"))

	v, err := readapi.RevisionOf(e, "edge", "abcd1")
	require.NoError(t, err)
	assert.Equal(t, hashes[0], v.Hash)
	assert.False(t, v.Served, "the newest revision is served, not this one")
	_, err = readapi.RevisionOf(e, "nope", "served")
	assert.EqualError(t, err, `no node "nope"`)
	_, err = readapi.RevisionOf(e, "nope", "abcd1")
	assert.EqualError(t, err, `no node "nope"`)
}
