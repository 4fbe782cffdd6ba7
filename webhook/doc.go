// Package webhook holds legate's Kubernetes admission webhooks: Envoy sidecar
// injection into Pods and validation of legate's own resources through the
// renderer. Built so far: the injection's annotations (Parse), legate's and
// MARIN3R's alike, each malformed or unknown one refused by name; the
// mutation, the admission server and the certificates are issue 16's
// remaining work.
package webhook
