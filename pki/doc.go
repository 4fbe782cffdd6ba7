// Package pki runs legate's small certificate authority: it issues the xDS
// server and client certificates used for mTLS between proxies and legate,
// renews them at 80 % of their lifetime and reloads them without a restart.
package pki
