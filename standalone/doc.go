// Package standalone is legate's home without Kubernetes (`legate serve`).
// Given a configuration (package serveconfig: the file's schema, its
// checks and the drivers it names), it wires the sources (Git and OCI),
// the shared pipeline (render, node claims, apply), the revision engine on
// its embedded store and the xDS server together, runs one fetch loop per
// source that hands each fetch to the pipeline, and serves the read API
// and page both homes share (readapi) with its own endpoints beside them:
// the token-protected writes and the push webhooks that trigger a fetch.
// Sources with a forge get a commit status per node on every commit,
// queued in the store's persisted outbox and delivered by a
// forge.Dispatcher (docs/standalone.md).
package standalone
