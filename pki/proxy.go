package pki

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// What an injected proxy mounts: the Secret holding its client certificate
// (one per node ID and namespace), at ProxyMountDir. Besides the PEM files
// the Secret carries two SDS files, each a DiscoveryResponse holding one
// Envoy Secret with its material inline, that the sidecar's bootstrap reads
// through path_config_source with watched_directory ProxyMountDir: when
// the kubelet swaps the Secret's files after a renewal, Envoy reads the new
// certificate without a restart.
const (
	ProxyMountDir = "/etc/legate/proxy"

	ProxyCertKey = "tls.crt"
	ProxyKeyKey  = "tls.key"
	ProxyCAKey   = "ca.crt"
	// ProxyCertificateSDSKey holds the SDS Secret ProxyCertificateSDSName
	// (the client certificate and key).
	ProxyCertificateSDSKey  = "sds-tls-certificate.yaml"
	ProxyCertificateSDSName = "legate_client_certificate"
	// ProxyValidationSDSKey holds the SDS Secret ProxyValidationSDSName
	// (the CA that signs legate's xDS server certificate).
	ProxyValidationSDSKey  = "sds-validation-context.yaml"
	ProxyValidationSDSName = "legate_ca"
)

// ProxySecretName is the name of the Secret holding the client certificate
// of node ID nodeID when the pod names none: a readable prefix of the node
// ID and a hash of all of it, so that node IDs differing only in characters
// a name cannot hold get different Secrets.
func ProxySecretName(nodeID string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(nodeID) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() == 40 {
			break
		}
	}
	readable := strings.Trim(b.String(), "-")
	sum := sha256.Sum256([]byte(nodeID))
	if readable == "" {
		return "legate-proxy-" + hex.EncodeToString(sum[:5])
	}
	return "legate-proxy-" + readable + "-" + hex.EncodeToString(sum[:5])
}

// ProxySecretData is the content of a proxy's Secret: the issued
// certificate and key, the CA certificate, and the two SDS files.
func ProxySecretData(iss Issued, caPEM []byte) (map[string][]byte, error) {
	certSDS, err := sdsFile(map[string]any{
		"name": ProxyCertificateSDSName,
		"tls_certificate": map[string]any{
			"certificate_chain": map[string]any{"inline_string": string(iss.CertPEM)},
			"private_key":       map[string]any{"inline_string": string(iss.KeyPEM)},
		},
	})
	if err != nil {
		return nil, err
	}
	caSDS, err := sdsFile(map[string]any{
		"name":               ProxyValidationSDSName,
		"validation_context": map[string]any{"trusted_ca": map[string]any{"inline_string": string(caPEM)}},
	})
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		ProxyCertKey:           iss.CertPEM,
		ProxyKeyKey:            iss.KeyPEM,
		ProxyCAKey:             caPEM,
		ProxyCertificateSDSKey: certSDS,
		ProxyValidationSDSKey:  caSDS,
	}, nil
}

// sdsFile is a DiscoveryResponse in YAML holding one Envoy TLS Secret.
func sdsFile(secret map[string]any) ([]byte, error) {
	secret["@type"] = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
	data, err := json.Marshal(map[string]any{"resources": []any{secret}})
	if err != nil {
		return nil, fmt.Errorf("encode an SDS file: %w", err)
	}
	return yaml.JSONToYAML(data)
}
