// Package xds serves published revisions to Envoy and other xDS clients over
// ADS (state-of-the-world and delta), tracks every proxy's ACKs and NACKs
// (matched by nonce) and hands them, as revisions.ProxyEvent values, to the
// Observer a home gives it, which is the revision engine. It binds streams
// to node IDs through an Authorizer (CertificateBinding under mutual TLS)
// and a Recheck before every push. It never decides a rollback itself; the
// secrets and endpoints it serves arrive in the snapshots that sds builds.
package xds
