// Package sds serves the key material of a configuration's external
// secrets (TLS certificates and keys, CA bundles, opaque values that a
// configuration names but does not hold) to the proxies over SDS, as part
// of the node's xDS snapshot, and the load assignments a configuration
// asks the home to build from Kubernetes EndpointSlices
// (generateFromEndpointSlices; an EndpointResolver, kubeendpoints on
// Kubernetes), pushed as a new EDS version when the slices change.
//
// A Resolver reads the material of one external secret: Files reads it
// from a directory (`legate serve --secrets-dir`); kubesecrets.Resolver
// reads Kubernetes Secrets, for the Kubernetes home. Both build the secret
// from a secret's entries with Build. A Server sits between the revision engine and the xDS
// server: it is the engine's Publisher, turning a publication and its
// resolved secrets into the snapshot served, and it pushes new material to
// the nodes that use it when told that material may have changed
// (Refresh, which a home calls on a poll tick or an informer event).
//
// Key material is read outside any lock another node needs: Warm reads a
// render's secrets before the pipeline applies it, and Refresh reads them
// again in the background; Publish, which the engine calls outside its
// lock, uses what was read and reads only what it has never seen (the
// first publication after a restart) or what was missing (a secret the
// node waits for), holding up only later publications of the same node.
//
// The package must not import a home (standalone, the Kubernetes
// controller) or a store.
package sds
