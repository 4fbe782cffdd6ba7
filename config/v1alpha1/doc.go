// Package v1alpha1 holds the legate.dev/v1alpha1 Kubernetes API: EnvoyConfig
// (MARIN3R's v1alpha1 spec, so that a MARIN3R manifest with its apiVersion
// changed applies), EnvoySource (where configuration is fetched from: Git,
// OCI or a Flux source) and EnvoyConfigRevision (one stored revision of a
// node's configuration). `make generate` writes the deep copies and the
// CRDs (config/crd) from the markers here. `legate controller`
// (package controller) reconciles EnvoyConfig objects; EnvoySource is not
// reconciled yet.
//
// +kubebuilder:object:generate=true
// +groupName=legate.dev
package v1alpha1
