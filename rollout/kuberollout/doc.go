// Package kuberollout applies rollout policies (package rollout) to the
// objects of a cluster: it compiles the spec.rollout of EnvoyConfigs and
// EnvoySources into the engine's plans and keeps them by source, runs their
// analyses with header values read from Secrets of the source's own
// namespace only, and decides which rollouts a legate.dev/rollout command
// of an object applies to. The Kubernetes home wires it: it sets a plan
// before it syncs a source's content, and it patches, tells and requeues.
//
// It must not import a home.
package kuberollout
