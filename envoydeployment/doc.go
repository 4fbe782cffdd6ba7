// Package envoydeployment runs the Envoy fleets that EnvoyDeployment
// objects ask for: a ServiceAccount, a Deployment or DaemonSet, a Service,
// a PodDisruptionBudget and a HorizontalPodAutoscaler, owned by the
// EnvoyDeployment and applied server-side so that drift is repaired.
//
// The objects are computed by pure functions (Build) from the
// EnvoyDeployment, the node ID of the EnvoyConfig it references and the
// sidecar injector, whose container and bootstrap the pods carry: the same
// ADS over mutual TLS, readiness listener, client certificate and drain as
// an injected sidecar. The Reconciler applies them and reports the
// workload's replicas and the revision legate serves the node.
//
// The package imports neither home; the Kubernetes home registers the
// Reconciler with its manager.
package envoydeployment
