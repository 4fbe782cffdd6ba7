// Package pki is legate's small certificate authority: it makes a CA and
// issues the xDS server's certificate and client certificates that bind
// node IDs, for mutual TLS between proxies and legate (`legate pki`).
// KeyPairFiles keeps a certificate, its key and a CA bundle read from files
// and reads them again when they change; the xDS server takes its
// certificates from it (xds.ServerTLS), so a renewed certificate is served
// without a restart. The package renews nothing by itself: pki/kubepki
// keeps the CA, the proxies' certificates and the xDS server's certificate
// in Kubernetes Secrets and renews them.
package pki
