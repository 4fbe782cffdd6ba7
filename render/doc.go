// Package render turns a tree of configuration files into validated, hashed,
// per-node sets of Envoy v3 resources, or into a complete, positioned list of
// what is wrong with them. It is pure: no network, no clock, no store.
package render
