// Package cue is legate's CUE stage: a CUE schema of the Envoy v3 API
// generated from the protobuf descriptors compiled into the binary (with the
// protoc-gen-validate rules translated to CUE constraints), configuration
// written in CUE, and user policies under policy/ that every rendered
// resource must satisfy. Problems are reported as render.Diagnostic values.
package cue
