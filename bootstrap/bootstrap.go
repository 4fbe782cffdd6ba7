// Package bootstrap writes the bootstrap files that point an xDS client at
// legate serve: grpc-go's JSON bootstrap (GRPC_XDS_BOOTSTRAP) for
// proxyless gRPC, and an Envoy bootstrap whose whole configuration comes
// over ADS. `legate bootstrap` and `make run` print them.
package bootstrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/yaml"
)

// Options say which node a client speaks for and how it reaches legate.
type Options struct {
	// Node is the node ID (node.id).
	Node string
	// XDSAddr is legate's ADS address, host:port.
	XDSAddr string
	// Pod names the client within the node (node.metadata.pod_name, which
	// legate shows as the proxy's name).
	Pod string
	// CAFile, CertFile and KeyFile turn on TLS: the CA that signed
	// legate's server certificate and, for mutual TLS, the client's
	// certificate and key (legate pki issue --node writes all three).
	CAFile, CertFile, KeyFile string
}

func (o Options) check() (host string, port int, err error) {
	if o.Node == "" {
		return "", 0, errors.New("a node ID is required (--node)")
	}
	h, p, err := net.SplitHostPort(o.XDSAddr)
	if err != nil {
		return "", 0, fmt.Errorf("xDS address %q (--xds-addr): want host:port: %w", o.XDSAddr, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("xDS address %q (--xds-addr): the port must be 1 to 65535", o.XDSAddr)
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return "", 0, errors.New("give both a client certificate (--cert) and its key (--key), or neither")
	}
	if o.CertFile != "" && o.CAFile == "" {
		return "", 0, errors.New("a client certificate (--cert) needs the CA of legate's server certificate too (--ca)")
	}
	return h, port, nil
}

func (o Options) metadata() map[string]any {
	if o.Pod == "" {
		return nil
	}
	return map[string]any{"pod_name": o.Pod}
}

// GRPC is grpc-go's xDS bootstrap (JSON) for the node: one ADS server
// speaking xDS v3, over plaintext or TLS through grpc-go's file_watcher
// certificate provider.
func GRPC(o Options) ([]byte, error) {
	if _, _, err := o.check(); err != nil {
		return nil, err
	}
	creds := []map[string]any{{"type": "insecure"}}
	if o.CAFile != "" {
		cfg := map[string]string{"ca_certificate_file": o.CAFile}
		if o.CertFile != "" {
			if filepath.Dir(o.CertFile) != filepath.Dir(o.KeyFile) {
				return nil, fmt.Errorf("grpc-go needs the certificate %s and its key %s in one directory", o.CertFile, o.KeyFile)
			}
			cfg["certificate_file"], cfg["private_key_file"] = o.CertFile, o.KeyFile
		}
		creds = []map[string]any{{"type": "tls", "config": cfg}}
	}
	node := map[string]any{"id": o.Node}
	if md := o.metadata(); md != nil {
		node["metadata"] = md
	}
	out, err := json.MarshalIndent(map[string]any{
		"xds_servers": []map[string]any{{
			"server_uri":      o.XDSAddr,
			"channel_creds":   creds,
			"server_features": []string{"xds_v3"},
		}},
		"node": node,
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// Envoy is an Envoy bootstrap (YAML) that takes listeners and clusters, and
// through them everything else, from legate over ADS.
func Envoy(o Options) ([]byte, error) {
	host, port, err := o.check()
	if err != nil {
		return nil, err
	}
	node := map[string]any{"id": o.Node, "cluster": o.Node}
	if md := o.metadata(); md != nil {
		node["metadata"] = md
	}
	addrType := "STRICT_DNS"
	if net.ParseIP(host) != nil {
		addrType = "STATIC"
	}
	cluster := map[string]any{
		"name":            "legate",
		"type":            addrType,
		"connect_timeout": "1s",
		"typed_extension_protocol_options": map[string]any{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": map[string]any{
				"@type":                "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
				"explicit_http_config": map[string]any{"http2_protocol_options": map[string]any{}},
			},
		},
		"load_assignment": map[string]any{
			"cluster_name": "legate",
			"endpoints": []any{map[string]any{"lb_endpoints": []any{map[string]any{"endpoint": map[string]any{
				"address": map[string]any{"socket_address": map[string]any{"address": host, "port_value": port}},
			}}}}},
		},
	}
	if o.CAFile != "" {
		tlsCtx := map[string]any{
			"validation_context": map[string]any{"trusted_ca": map[string]any{"filename": o.CAFile}},
			// HTTP/2 over TLS is negotiated by ALPN (RFC 9113, 3.2), and
			// Envoy offers none unless told: legate's transport and grpc-go's
			// (since 1.67) refuse a TLS client that does not say h2.
			"alpn_protocols": []any{"h2"},
		}
		if o.CertFile != "" {
			tlsCtx["tls_certificates"] = []any{map[string]any{
				"certificate_chain": map[string]any{"filename": o.CertFile},
				"private_key":       map[string]any{"filename": o.KeyFile},
			}}
		}
		upstream := map[string]any{
			"@type":              "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
			"common_tls_context": tlsCtx,
		}
		if net.ParseIP(host) == nil {
			upstream["sni"] = host
		}
		cluster["transport_socket"] = map[string]any{"name": "envoy.transport_sockets.tls", "typed_config": upstream}
	}
	ads := map[string]any{"ads": map[string]any{}, "resource_api_version": "V3"}
	doc := map[string]any{
		"node": node,
		"dynamic_resources": map[string]any{
			"ads_config": map[string]any{
				"api_type": "GRPC", "transport_api_version": "V3",
				"grpc_services": []any{map[string]any{"envoy_grpc": map[string]any{"cluster_name": "legate"}}},
			},
			"cds_config": ads,
			"lds_config": ads,
		},
		"static_resources": map[string]any{"clusters": []any{cluster}},
		"admin":            map[string]any{"address": map[string]any{"socket_address": map[string]any{"address": "127.0.0.1", "port_value": 9901}}},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	out, err := yaml.JSONToYAML(data)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# Envoy bootstrap for node %q: every listener and cluster comes from legate\n# serve over ADS at %s (written by legate bootstrap envoy).\n", o.Node, o.XDSAddr)
	return append([]byte(header), out...), nil
}
