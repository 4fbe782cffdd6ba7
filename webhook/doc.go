// Package webhook holds legate's Kubernetes admission webhooks: Envoy sidecar
// injection into Pods and validation of legate's own resources through the
// renderer. Nothing is built here yet: the Kubernetes home comes first.
package webhook
