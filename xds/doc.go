// Package xds serves published revisions to Envoy and other xDS clients over
// ADS (state-of-the-world and delta), tracks every proxy's ACKs and NACKs and
// reports them to the revision engine. It never decides a rollback itself.
package xds
