package bootstrap

import (
	"encoding/json"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3" // HttpProtocolOptions
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// TestEnvoyBootstrapIsValid decodes the bootstrap strictly as Envoy's
// Bootstrap message and runs its validation rules (Envoy itself cannot be
// installed here; this is what Envoy checks first).
func TestEnvoyBootstrapIsValid(t *testing.T) {
	for name, o := range map[string]Options{
		"plaintext":  {Node: "edge", XDSAddr: "127.0.0.1:18000", Pod: "edge-1"},
		"mutual TLS": {Node: "edge", XDSAddr: "legate.internal:18000", CAFile: "/pki/ca.crt", CertFile: "/pki/nodes/edge/tls.crt", KeyFile: "/pki/nodes/edge/tls.key"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := Envoy(o)
			require.NoError(t, err)
			js, err := yaml.YAMLToJSON(out)
			require.NoError(t, err)
			var bs bootstrapv3.Bootstrap
			require.NoError(t, protojson.Unmarshal(js, &bs), "%s", out)
			require.NoError(t, bs.ValidateAll())
			assert.Equal(t, "edge", bs.GetNode().GetId())
			assert.NotNil(t, bs.GetDynamicResources().GetLdsConfig().GetAds(), "listeners come over ADS")
			cl := bs.GetStaticResources().GetClusters()[0]
			sa := cl.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			assert.EqualValues(t, 18000, sa.GetPortValue())
			assert.Equal(t, o.CAFile != "", cl.GetTransportSocket() != nil)
			if o.CAFile != "" {
				var up tlsv3.UpstreamTlsContext
				require.NoError(t, cl.GetTransportSocket().GetTypedConfig().UnmarshalTo(&up))
				assert.Equal(t, []string{"h2"}, up.GetCommonTlsContext().GetAlpnProtocols(), "the xDS server refuses TLS without ALPN h2")
			}
		})
	}
}

func TestGRPCBootstrap(t *testing.T) {
	out, err := GRPC(Options{Node: "grpc-client", XDSAddr: "127.0.0.1:18000", Pod: "laptop"})
	require.NoError(t, err)
	var got struct {
		XDSServers []struct {
			ServerURI    string           `json:"server_uri"`
			ChannelCreds []map[string]any `json:"channel_creds"`
			Features     []string         `json:"server_features"`
		} `json:"xds_servers"`
		Node struct {
			ID       string         `json:"id"`
			Metadata map[string]any `json:"metadata"`
		} `json:"node"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got.XDSServers, 1)
	assert.Equal(t, "127.0.0.1:18000", got.XDSServers[0].ServerURI)
	assert.Equal(t, "insecure", got.XDSServers[0].ChannelCreds[0]["type"])
	assert.Equal(t, []string{"xds_v3"}, got.XDSServers[0].Features)
	assert.Equal(t, "grpc-client", got.Node.ID)
	assert.Equal(t, "laptop", got.Node.Metadata["pod_name"])

	out, err = GRPC(Options{Node: "n", XDSAddr: "legate:18000", CAFile: "/pki/ca.crt", CertFile: "/pki/n/tls.crt", KeyFile: "/pki/n/tls.key"})
	require.NoError(t, err)
	assert.Contains(t, string(out), `"certificate_file": "/pki/n/tls.crt"`)

	// Each mistake names the flag that fixes it.
	for _, bad := range []struct {
		o    Options
		flag string
	}{
		{Options{XDSAddr: "127.0.0.1:18000"}, "(--node)"},
		{Options{Node: "n", XDSAddr: "18000"}, "(--xds-addr)"},
		{Options{Node: "n", XDSAddr: "h:0"}, "(--xds-addr)"},
		{Options{Node: "n", XDSAddr: "h:1", CertFile: "/c"}, "(--key)"},
		{Options{Node: "n", XDSAddr: "h:1", CertFile: "/c", KeyFile: "/k"}, "(--ca)"},
	} {
		_, err := GRPC(bad.o)
		assert.ErrorContains(t, err, bad.flag, "%+v", bad.o)
		_, err = Envoy(bad.o)
		assert.ErrorContains(t, err, bad.flag, "%+v", bad.o)
	}
}
