// Package xdsclient builds grpc-go xDS bootstrap configurations that point a
// real third-party xDS client (google.golang.org/grpc/xds) at a legate
// server, for end-to-end tests and load harnesses.
package xdsclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/xds" // registers the xds:/// resolver and balancers
)

// Bootstrap describes one xDS client: where the management server is and
// which node it speaks for.
type Bootstrap struct {
	// ServerAddr is the ADS server's host:port.
	ServerAddr string
	// NodeID is sent as node.id in every request.
	NodeID string
	// Metadata is sent as node.metadata (for example pod_name).
	Metadata map[string]any
	// TLS, when set, makes the client speak TLS to the server (grpc-go's
	// "tls" channel credentials) instead of plaintext.
	TLS *TLSFiles
}

// TLSFiles are the PEM files of a TLS client, watched by grpc-go's
// file_watcher certificate provider.
type TLSFiles struct {
	// CAFile holds the CA certificates that sign the server's certificate;
	// empty trusts the system's roots.
	CAFile string
	// CertFile and KeyFile are the client certificate and its key for
	// mutual TLS; both empty presents no client certificate. grpc-go
	// requires them to be in one directory.
	CertFile, KeyFile string
}

// config is the "config" object of grpc-go's "tls" channel credentials.
func (f TLSFiles) config() (map[string]string, error) {
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("bootstrap: TLS needs both CertFile and KeyFile, or neither")
	}
	if f.CertFile != "" && filepath.Dir(f.CertFile) != filepath.Dir(f.KeyFile) {
		return nil, fmt.Errorf("bootstrap: put the TLS CertFile %s and KeyFile %s in one directory, as grpc-go requires", f.CertFile, f.KeyFile)
	}
	cfg := map[string]string{}
	for key, path := range map[string]string{
		"ca_certificate_file": f.CAFile,
		"certificate_file":    f.CertFile,
		"private_key_file":    f.KeyFile,
	} {
		if path != "" {
			cfg[key] = path
		}
	}
	return cfg, nil
}

// JSON renders the bootstrap in grpc-go's format: one ADS server speaking
// xDS v3, the node, and the channel credentials.
func (b Bootstrap) JSON() ([]byte, error) {
	if b.ServerAddr == "" {
		return nil, errors.New("bootstrap: server address is required")
	}
	if b.NodeID == "" {
		return nil, errors.New("bootstrap: node ID is required")
	}
	creds := []map[string]any{{"type": "insecure"}}
	if b.TLS != nil {
		cfg, err := b.TLS.config()
		if err != nil {
			return nil, err
		}
		creds = []map[string]any{{"type": "tls", "config": cfg}}
	}
	node := map[string]any{"id": b.NodeID}
	if len(b.Metadata) > 0 {
		node["metadata"] = b.Metadata
	}
	return json.Marshal(map[string]any{
		"xds_servers": []map[string]any{{
			"server_uri":      b.ServerAddr,
			"channel_creds":   creds,
			"server_features": []string{"xds_v3"},
		}},
		"node": node,
	})
}

// Resolver returns an xds:/// resolver that uses this bootstrap instead of
// the process-wide GRPC_XDS_BOOTSTRAP settings, so tests can run several
// clients with different node IDs in one process. Pass it to grpc.NewClient
// with grpc.WithResolvers.
func (b Bootstrap) Resolver() (resolver.Builder, error) {
	data, err := b.JSON()
	if err != nil {
		return nil, err
	}
	return xds.NewXDSResolverWithConfigForTesting(data)
}
