// Package test holds legate's end-to-end tests and the harnesses that start
// the real components they run against: a Kubernetes API server (envtest), a
// Gitea forge, and grpc-go xDS clients. Nothing here ships in the binary.
package test
