package webhook

import (
	"encoding/json"
	"net"
	"path"
	"strconv"
	"strings"

	"github.com/legate-dev/legate/pki"
)

// Names inside the sidecar's bootstrap.
const (
	xdsClusterName     = "legate"
	adminClusterName   = "legate_admin"
	readinessListener  = "legate_readiness"
	readinessPath      = "/ready"
	podNameVar         = "POD_NAME"
	podNamespaceVar    = "POD_NAMESPACE"
	upstreamTLSType    = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext"
	httpOptionsType    = "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
	hcmType            = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	routerType         = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	fileAccessLogType  = "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"
	httpOptionsExtName = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
)

// bootstrap is the sidecar's Envoy bootstrap as JSON (which Envoy's
// --config-yaml reads as YAML). Every listener and cluster of the node
// comes from legate over ADS, through a static cluster speaking mutual
// TLS with the certificate and CA read from the SDS files of the proxy's
// Secret; a static listener on the readiness port routes only /ready to
// the admin interface.
//
// node.metadata names the pod through $(POD_NAME) and $(POD_NAMESPACE),
// which the kubelet expands from the container's environment: a pod made
// from generateName has no name at admission. Every other "$" is doubled
// so that the kubelet leaves it as written.
func (in Injector) bootstrap(s Sidecar) (string, error) {
	doc := map[string]any{
		"node": map[string]any{
			"id":      s.NodeID,
			"cluster": s.ClusterID,
			"metadata": map[string]any{
				"pod_name":  "$(" + podNameVar + ")",
				"namespace": "$(" + podNamespaceVar + ")",
			},
		},
		"dynamic_resources": dynamicResources(),
		"static_resources": map[string]any{
			"clusters":  []any{in.xdsCluster(), adminCluster(s)},
			"listeners": []any{readinessListenerConfig(s)},
		},
		"admin": map[string]any{
			"address": socketAddress(s.AdminBindAddress, s.AdminPort),
			"access_log": []any{map[string]any{
				"name":         "envoy.access_loggers.file",
				"typed_config": map[string]any{"@type": fileAccessLogType, "path": s.AdminAccessLog},
			}},
		},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	// Within a JSON string a quote is escaped, so `"key":"value"` is
	// found only where the key and its value are.
	out := strings.ReplaceAll(string(data), "$", "$$")
	for key, v := range map[string]string{"pod_name": podNameVar, "namespace": podNamespaceVar} {
		out = strings.Replace(out, `"`+key+`":"$$(`+v+`)"`, `"`+key+`":"$(`+v+`)"`, 1)
	}
	return out, nil
}

func dynamicResources() map[string]any {
	ads := map[string]any{"ads": map[string]any{}, "resource_api_version": "V3"}
	return map[string]any{
		"ads_config": map[string]any{
			"api_type": "GRPC", "transport_api_version": "V3",
			"grpc_services": []any{map[string]any{"envoy_grpc": map[string]any{"cluster_name": xdsClusterName}}},
		},
		"cds_config": ads,
		"lds_config": ads,
	}
}

// xdsCluster reaches legate's xDS Service over mutual TLS and HTTP/2.
func (in Injector) xdsCluster() map[string]any {
	host, port := in.xdsHostPort()
	discovery := "STRICT_DNS"
	if net.ParseIP(host) != nil {
		discovery = "STATIC"
	}
	return map[string]any{
		"name":            xdsClusterName,
		"type":            discovery,
		"connect_timeout": "5s",
		"typed_extension_protocol_options": map[string]any{
			httpOptionsExtName: map[string]any{
				"@type":                httpOptionsType,
				"explicit_http_config": map[string]any{"http2_protocol_options": map[string]any{}},
			},
		},
		"load_assignment":  loadAssignment(xdsClusterName, host, port),
		"transport_socket": map[string]any{"name": "envoy.transport_sockets.tls", "typed_config": in.upstreamTLS(host)},
	}
}

// upstreamTLS presents the proxy's client certificate and checks the
// server's against legate's CA and XDSServerName, both read from the SDS
// files of the mounted Secret. Envoy watches the mount directory, so the
// kubelet's atomic swap of the files after a renewal is read without a
// restart. ALPN h2: grpc-go servers refuse TLS without it.
func (in Injector) upstreamTLS(host string) map[string]any {
	sanType := "DNS"
	if net.ParseIP(in.serverName()) != nil {
		sanType = "IP_ADDRESS"
	}
	ctx := map[string]any{
		"@type": upstreamTLSType,
		"common_tls_context": map[string]any{
			"alpn_protocols": []any{"h2"},
			"tls_certificate_sds_secret_configs": []any{
				sdsFromFile(pki.ProxyCertificateSDSName, pki.ProxyCertificateSDSKey),
			},
			"combined_validation_context": map[string]any{
				"default_validation_context": map[string]any{
					"match_typed_subject_alt_names": []any{map[string]any{
						"san_type": sanType,
						"matcher":  map[string]any{"exact": in.serverName()},
					}},
				},
				"validation_context_sds_secret_config": sdsFromFile(pki.ProxyValidationSDSName, pki.ProxyValidationSDSKey),
			},
		},
	}
	if net.ParseIP(host) == nil {
		ctx["sni"] = host
	}
	return ctx
}

func sdsFromFile(name, key string) map[string]any {
	return map[string]any{
		"name": name,
		"sds_config": map[string]any{
			"resource_api_version": "V3",
			"path_config_source": map[string]any{
				"path":              path.Join(pki.ProxyMountDir, key),
				"watched_directory": map[string]any{"path": pki.ProxyMountDir},
			},
		},
	}
}

// adminCluster points at Envoy's own admin interface, for the readiness
// listener.
func adminCluster(s Sidecar) map[string]any {
	return map[string]any{
		"name":            adminClusterName,
		"type":            "STATIC",
		"connect_timeout": "1s",
		"load_assignment": loadAssignment(adminClusterName, adminDialAddress(s), int(s.AdminPort)),
	}
}

// readinessListenerConfig serves GET /ready on every address of the pod
// from the admin interface and answers 404 to any other path: the kubelet
// probes the pod IP, the admin stays on loopback and never exposed.
func readinessListenerConfig(s Sidecar) map[string]any {
	routes := []any{
		map[string]any{"match": map[string]any{"path": readinessPath}, "route": map[string]any{"cluster": adminClusterName}},
		map[string]any{"match": map[string]any{"prefix": "/"}, "direct_response": map[string]any{"status": 404}},
	}
	hcm := map[string]any{
		"@type":       hcmType,
		"stat_prefix": readinessListener,
		"route_config": map[string]any{
			"name":          readinessListener,
			"virtual_hosts": []any{map[string]any{"name": readinessListener, "domains": []any{"*"}, "routes": routes}},
		},
		"http_filters": []any{map[string]any{"name": "envoy.filters.http.router", "typed_config": map[string]any{"@type": routerType}}},
	}
	return map[string]any{
		"name":    readinessListener,
		"address": socketAddress("0.0.0.0", s.ReadinessPort),
		"filter_chains": []any{map[string]any{"filters": []any{map[string]any{
			"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm,
		}}}},
	}
}

// adminDialAddress is where the pod reaches the admin interface: its bind
// address, or loopback when it binds every address.
func adminDialAddress(s Sidecar) string {
	ip := net.ParseIP(s.AdminBindAddress)
	switch {
	case ip == nil || !ip.IsUnspecified():
		return s.AdminBindAddress
	case ip.To4() != nil:
		return "127.0.0.1"
	default:
		return "::1"
	}
}

func socketAddress(host string, port int32) map[string]any {
	return map[string]any{"socket_address": map[string]any{"address": host, "port_value": port}}
}

func loadAssignment(cluster, host string, port int) map[string]any {
	return map[string]any{
		"cluster_name": cluster,
		"endpoints": []any{map[string]any{"lb_endpoints": []any{map[string]any{
			"endpoint": map[string]any{"address": socketAddress(host, int32(port))},
		}}}},
	}
}

// xdsHostPort splits XDSAddress (Check has accepted it).
func (in Injector) xdsHostPort() (string, int) {
	host, p, _ := net.SplitHostPort(in.XDSAddress)
	port, _ := strconv.Atoi(p)
	return host, port
}

// serverName is the name legate's server certificate must carry.
func (in Injector) serverName() string {
	if in.XDSServerName != "" {
		return in.XDSServerName
	}
	host, _ := in.xdsHostPort()
	return host
}
