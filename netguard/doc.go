// Package netguard keeps legate's outbound fetches (Git and OCI sources,
// Flux artifacts, commit-status APIs) away from addresses a tenant must not
// reach through legate: loopback, link-local (where cloud metadata services
// answer), private and cluster-internal networks, and the unspecified,
// multicast and reserved ranges.
//
// The check runs when a connection is made, on the address the name
// resolved to (a net.Dialer Control function), so a name that resolves to
// a public address when a URL is checked and to 127.0.0.1 when it is
// dialled (DNS rebinding) is refused too. A refused dial never reaches the
// network, and its error names the host as the user wrote it and the kind
// of address, never the resolved address or anything a port scan could
// read.
//
// Listen and Limit are the inbound side: the listeners of both homes,
// whose errors name the setting that chose the address, each holding a
// bounded number of open connections (the xDS listener's bound is a
// setting, the HTTP listeners' MaxHTTPConnections).
//
// A nil *Guard allows everything: legate serve, a single-tenant tool, runs
// without one; legate controller runs with one unless told otherwise.
package netguard
