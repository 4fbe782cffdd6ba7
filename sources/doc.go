// Package sources fetches configuration from where its authors keep it
// and yields each fetch as a Result: a read-only Snapshot (a file tree
// plus the Origin it came from) and whether its content changed. The
// drivers are subpackages: git (go-git), oci (OCI artifacts), flux (the
// artifact of a Flux GitRepository or OCIRepository) and kube (EnvoyConfig
// objects, for the Kubernetes home); envoysource builds the git, oci or
// flux driver an EnvoySource asks for; hooks turns forge push webhooks into
// immediate fetches. Sources never render, validate or publish what they
// fetch, and import no later stage (test/imports enforces it).
//
// What a home's drivers share lives here too: the memory their trees may
// take (Budget), the fetch workers shared fairly between tenants
// (FairShare) and the guard of every address a tenant can point legate at
// (NewFetchGuard, FluxClient, ForgeClient).
package sources
