package webhook

import (
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	fileaccesslogv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpoptionsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	"github.com/legate-dev/legate/pki"
)

// The extensions the bootstrap names, so that protojson resolves them.
var (
	_ = fileaccesslogv3.FileAccessLog{}
	_ = routerv3.Router{}
	_ = httpoptionsv3.HttpProtocolOptions{}
)

// expandLikeKubelet expands $(VAR) from env and $$ to $ in one argument,
// as the kubelet does with a container's args; an undefined $(VAR) stays.
func expandLikeKubelet(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if v, ok := env[s[i+2:i+end]]; end > 0 && ok {
				b.WriteString(v)
				i += end
				continue
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// decodeBootstrap reads an --config-yaml argument as Envoy would after
// the kubelet's expansion: strictly (an unknown field or an unresolvable
// @type fails), then Envoy's validation rules on the bootstrap and on
// every message packed in an Any.
func decodeBootstrap(t *testing.T, arg string) *bootstrapv3.Bootstrap {
	t.Helper()
	expanded := expandLikeKubelet(arg, map[string]string{podNameVar: "shop-7d9f-x2x", podNamespaceVar: "shop"})
	js, err := yaml.YAMLToJSON([]byte(expanded))
	require.NoError(t, err)
	var bs bootstrapv3.Bootstrap
	require.NoError(t, protojson.Unmarshal(js, &bs), "%s", js)
	require.NoError(t, bs.ValidateAll())
	validateAnys(t, bs.ProtoReflect())
	return &bs
}

// validateAnys unpacks every Any under m and runs its validation rules
// (PGV does not look inside an Any).
func validateAnys(t *testing.T, m protoreflect.Message) {
	t.Helper()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			return true
		}
		each := func(msg protoreflect.Message) {
			if a, ok := msg.Interface().(*anypb.Any); ok {
				inner, err := a.UnmarshalNew()
				require.NoError(t, err, a.GetTypeUrl())
				v, ok := inner.(interface{ ValidateAll() error })
				require.True(t, ok, a.GetTypeUrl())
				require.NoError(t, v.ValidateAll(), a.GetTypeUrl())
				validateAnys(t, inner.ProtoReflect())
				return
			}
			validateAnys(t, msg)
		}
		switch {
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				each(v.List().Get(i).Message())
			}
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					each(mv.Message())
					return true
				})
			}
		default:
			each(v.Message())
		}
		return true
	})
}

// TestBootstrapIsValidEnvoy decodes the sidecar's bootstrap strictly as
// Envoy's Bootstrap and runs Envoy's validation rules (Envoy itself cannot
// be installed here: this is what it checks first), for names and IP
// addresses, and node IDs with characters the kubelet would expand.
func TestBootstrapIsValidEnvoy(t *testing.T) {
	for name, tc := range map[string]struct {
		in  Injector
		ann map[string]string
	}{
		"DNS name": {Injector{}, nil},
		"IP address, admin on every address": {
			Injector{XDSAddress: "10.96.0.18:18000", XDSServerName: "legate-xds.legate-system.svc", AllowAdminBeyondLoopback: true},
			map[string]string{"legate.dev/admin.bind-address": "0.0.0.0", "legate.dev/admin.access-log-path": "/dev/stdout"},
		},
		"IPv6 and an IP SAN": {Injector{XDSAddress: "[fd00::18]:18000"}, map[string]string{"legate.dev/node-id": "a$(HOME)$$b", "legate.dev/readiness-port": "15021"}},
	} {
		t.Run(name, func(t *testing.T) {
			ann := map[string]string{"legate.dev/node-id": "shop-edge", "legate.dev/cluster-id": "shop"}
			for k, v := range tc.ann {
				ann[k] = v
			}
			pod := shopPod(ann)
			s, _, err := tc.in.Inject(pod)
			require.NoError(t, err)
			c := pod.Spec.InitContainers[0]
			require.Equal(t, "--config-yaml", c.Args[0])
			bs := decodeBootstrap(t, c.Args[1])

			assert.Equal(t, ann["legate.dev/node-id"], bs.GetNode().GetId(), "the kubelet leaves the node ID as written")
			assert.Equal(t, "shop", bs.GetNode().GetCluster())
			md := bs.GetNode().GetMetadata().GetFields()
			assert.Equal(t, "shop-7d9f-x2x", md["pod_name"].GetStringValue())
			assert.Equal(t, "shop", md["namespace"].GetStringValue())
			assert.NotNil(t, bs.GetDynamicResources().GetLdsConfig().GetAds(), "listeners come over ADS")
			assert.NotNil(t, bs.GetDynamicResources().GetCdsConfig().GetAds(), "clusters come over ADS")

			clusters := bs.GetStaticResources().GetClusters()
			require.Len(t, clusters, 2)
			xds := clusters[0]
			assert.Equal(t, "legate", xds.GetName())
			host, port := tc.in.withDefaults().xdsHostPort()
			sa := xds.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			assert.Equal(t, host, sa.GetAddress())
			assert.EqualValues(t, port, sa.GetPortValue())
			var upstream tlsv3.UpstreamTlsContext
			require.NoError(t, xds.GetTransportSocket().GetTypedConfig().UnmarshalTo(&upstream))
			common := upstream.GetCommonTlsContext()
			assert.Equal(t, []string{"h2"}, common.GetAlpnProtocols(), "grpc-go servers refuse TLS without ALPN h2")
			certSDS := common.GetTlsCertificateSdsSecretConfigs()[0]
			assert.Equal(t, pki.ProxyCertificateSDSName, certSDS.GetName())
			assert.Equal(t, "/etc/legate/proxy/"+pki.ProxyCertificateSDSKey, certSDS.GetSdsConfig().GetPathConfigSource().GetPath())
			assert.Equal(t, pki.ProxyMountDir, certSDS.GetSdsConfig().GetPathConfigSource().GetWatchedDirectory().GetPath())
			combined := common.GetCombinedValidationContext()
			assert.Equal(t, pki.ProxyValidationSDSName, combined.GetValidationContextSdsSecretConfig().GetName())
			san := combined.GetDefaultValidationContext().GetMatchTypedSubjectAltNames()[0]
			assert.Equal(t, tc.in.withDefaults().serverName(), san.GetMatcher().GetExact())
			if strings.Contains(tc.in.withDefaults().serverName(), ":") {
				assert.Equal(t, "IP_ADDRESS", san.GetSanType().String())
				assert.Empty(t, upstream.GetSni(), "no SNI for an IP address")
			} else {
				assert.Equal(t, "DNS", san.GetSanType().String())
			}

			admin := clusters[1].GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			assert.Equal(t, "127.0.0.1", admin.GetAddress(), "the readiness listener reaches the admin on loopback")
			assert.EqualValues(t, s.AdminPort, admin.GetPortValue())
			assert.EqualValues(t, s.AdminPort, bs.GetAdmin().GetAddress().GetSocketAddress().GetPortValue())

			listeners := bs.GetStaticResources().GetListeners()
			require.Len(t, listeners, 1)
			assert.EqualValues(t, s.ReadinessPort, listeners[0].GetAddress().GetSocketAddress().GetPortValue())
			assert.Equal(t, s.ReadinessPort, c.ReadinessProbe.HTTPGet.Port.IntVal)
			var hcm hcmv3.HttpConnectionManager
			require.NoError(t, listeners[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm))
			routes := hcm.GetRouteConfig().GetVirtualHosts()[0].GetRoutes()
			require.Len(t, routes, 2)
			assert.Equal(t, "/ready", routes[0].GetMatch().GetPath(), "only /ready reaches the admin")
			assert.Equal(t, adminClusterName, routes[0].GetRoute().GetCluster())
			assert.EqualValues(t, 404, routes[1].GetDirectResponse().GetStatus(), "anything else is refused")
		})
	}
}

// The SDS files of a proxy's Secret are what the bootstrap's SDS configs
// name: a DiscoveryResponse holding one valid Secret each.
func TestProxySecretSDSFilesMatchTheBootstrap(t *testing.T) {
	now := time.Now()
	ca, _, err := pki.NewCA("legate test CA", 2*time.Hour, now)
	require.NoError(t, err)
	issued, err := ca.IssueNode([]string{"shop-edge"}, time.Hour, now)
	require.NoError(t, err)
	data, err := pki.ProxySecretData(issued, ca.CertPEM())
	require.NoError(t, err)
	for key, name := range map[string]string{
		pki.ProxyCertificateSDSKey: pki.ProxyCertificateSDSName,
		pki.ProxyValidationSDSKey:  pki.ProxyValidationSDSName,
	} {
		js, err := yaml.YAMLToJSON(data[key])
		require.NoError(t, err)
		var resp discoveryv3.DiscoveryResponse
		require.NoError(t, protojson.Unmarshal(js, &resp), key)
		require.Len(t, resp.GetResources(), 1, key)
		var secret tlsv3.Secret
		require.NoError(t, resp.GetResources()[0].UnmarshalTo(&secret), key)
		require.NoError(t, secret.ValidateAll(), key)
		assert.Equal(t, name, secret.GetName(), key)
	}
	var certs tlsv3.Secret
	js, err := yaml.YAMLToJSON(data[pki.ProxyCertificateSDSKey])
	require.NoError(t, err)
	var resp discoveryv3.DiscoveryResponse
	require.NoError(t, protojson.Unmarshal(js, &resp))
	require.NoError(t, proto.Unmarshal(resp.GetResources()[0].GetValue(), &certs))
	assert.Equal(t, string(issued.CertPEM), certs.GetTlsCertificate().GetCertificateChain().GetInlineString())
}

func TestExpandLikeKubelet(t *testing.T) {
	env := map[string]string{"A": "x"}
	assert.Equal(t, "x $(B) $ $(A) $", expandLikeKubelet("$(A) $(B) $$ $$(A) $", env))
}
