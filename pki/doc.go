// Package pki is legate's small certificate authority: it makes a CA and
// issues the xDS server's certificate and client certificates that bind
// node IDs, for mutual TLS between proxies and legate (`legate pki`).
// It does not renew anything by itself: the xDS server reads its files
// again when they change, and automatic issuing and renewal for injected
// sidecars is not built yet.
package pki
