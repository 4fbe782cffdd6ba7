// Package config holds legate's Kubernetes API types (group legate.dev) and
// the manifests generated from them (CRDs, RBAC, webhook and manager
// configuration, samples).
package config
