// Package config holds legate's Kubernetes API types (group legate.dev).
// The manifests that will be generated from them (CRDs, RBAC, webhook and
// manager configuration) do not exist yet: the Kubernetes home is not
// built.
package config
