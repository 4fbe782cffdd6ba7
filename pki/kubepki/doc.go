// Package kubepki keeps legate's small PKI in Kubernetes Secrets: the CA
// (LoadOrCreateCA), the proxies' client certificates (Authority: one
// Secret per node ID and namespace that an injected Envoy mounts, issued on
// admission and renewed by the leader) and the xDS server's certificate
// (ServerCertificate: kept in memory for every TLS handshake, re-read from
// its Secret by every replica). Start sets them up in a Kubernetes home,
// with the injected pods' reconciler (ProxyCertificates), which issues a
// Pod's certificate only where the home's tenancy decision (MayServe)
// allows it, and the writer of the CA into the webhook configurations'
// caBundle (CABundle). The home passes its decisions in as functions:
// this package imports no home.
//
// A certificate is renewed at two thirds of its lifetime, or at once when
// the CA that signed it is no longer the current one. Whether a Secret is
// due is decided by pure functions fed by an injected clock; the I/O around
// them writes with the object's resourceVersion, so two replicas or two
// admissions racing never overwrite each other's certificate.
//
// Secrets are legate's when they carry the label LabelCertificate; a
// Secret of the same name without it is refused, never overwritten. Key
// material is written only to Secrets' data: never to annotations, logs or
// errors.
//
// The clients given to this package should read from the API server, not
// from a controller-runtime cache: a cached client would keep every Secret
// of the cluster in memory, and a cache does not page a List.
package kubepki
