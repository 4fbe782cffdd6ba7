// Package xdsclient builds grpc-go xDS bootstrap configurations that point a
// real third-party xDS client (google.golang.org/grpc/xds) at a legate
// server, for end-to-end tests and load harnesses.
package xdsclient

import (
	"encoding/json"
	"errors"

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
	// TLS, when set, makes the client use mTLS to the server with these
	// PEM files instead of insecure credentials.
	TLS *TLSFiles
}

// TLSFiles are the PEM files of an mTLS client.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
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
		creds = []map[string]any{{"type": "tls", "config": map[string]string{
			"ca_certificate_file": b.TLS.CAFile,
			"certificate_file":    b.TLS.CertFile,
			"private_key_file":    b.TLS.KeyFile,
		}}}
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
