// Package config holds legate's Kubernetes API: the types of group
// legate.dev in config/v1alpha1, the CRDs generated from them into
// config/crd by `make generate` (controller-gen; `make verify` fails when
// they drift), and samples in config/samples that the tests apply to a
// real API server. The controller's RBAC, manager Deployment, webhook
// manifests and kustomize bases are not written yet.
package config
