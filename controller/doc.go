// Package controller is legate's Kubernetes home (`legate controller`): a
// controller-runtime manager that reconciles EnvoyConfig objects through
// the shared pipeline (sources/kube → pipeline → revisions on the API
// server → sds with Kubernetes Secrets → xds) and writes what happened
// into each object's status, in MARIN3R's terms (cacheState,
// publishedVersion, desiredVersion, revisions) and as Flux/kstatus
// conditions.
//
// Built: EnvoyConfig and EnvoySource objects (git, OCI, Flux sources),
// Secrets and EndpointSlices, conditions and events, commit statuses, and
// several replicas with leader election (revisions/kubereplicas).
//
// The package only schedules and displays: it must not render, decide
// publication or taint, or re-implement a pipeline step.
package controller
