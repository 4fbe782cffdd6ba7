// Package standalone is legate's home without Kubernetes (`legate serve`):
// it wires the sources, the renderer, the revision engine on its embedded
// store and the xDS server together, runs one fetch loop per source, and
// serves the HTTP status API, health checks and metrics.
package standalone
