// Package controller is legate's Kubernetes home (`legate controller`): a
// controller-runtime manager that reconciles EnvoyConfig objects through
// the shared pipeline (sources/kube → pipeline → revisions on the API
// server → sds with Kubernetes Secrets → xds) and writes what happened
// into each object's status, in MARIN3R's terms (cacheState,
// publishedVersion, desiredVersion, revisions) and as Flux/kstatus
// conditions.
//
// Built so far: EnvoyConfig objects. Not yet: EnvoySource and Flux
// sources, EndpointSlices, events, leader election (issue 14, 15).
//
// The package only schedules and displays: it must not render, decide
// publication or taint, or re-implement a pipeline step.
package controller
