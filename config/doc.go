// Package config holds legate's Kubernetes API: the types of group
// legate.dev in config/v1alpha1, the CRDs generated from them into
// config/crd by `make generate` (controller-gen; `make verify` fails when
// they drift), and samples in config/samples that the tests apply to a
// real API server; the controller's ClusterRole generated into config/rbac
// from the markers of package controller, a Deployment in config/manager,
// and the cluster-wide kustomize base config/default. Webhook manifests
// and a namespaced install are not written yet.
package config
