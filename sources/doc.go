// Package sources fetches configuration from where its authors keep it (Git
// repositories and OCI artifacts; Kubernetes EnvoyConfig objects once the
// Kubernetes home exists) and yields each fetch as a read-only Snapshot: a
// file tree plus the Origin it came from. Sources never render, validate or
// publish what they fetch.
//
// What a home's drivers share lives here too: the memory their trees may
// take (Budget), the fetch workers shared fairly between tenants
// (FairShare) and the guard of every address a tenant can point legate at
// (NewFetchGuard, FluxClient, ForgeClient).
package sources
