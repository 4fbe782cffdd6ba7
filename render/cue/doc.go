// Package cue is legate's CUE stage: a CUE schema of the Envoy v3 API
// generated from the protobuf descriptors compiled into the binary (with the
// protoc-gen-validate rules translated to CUE constraints), configuration
// written in CUE, and user policies under policy/ that every rendered
// resource must satisfy. Problems are reported as render.Diagnostic values.
//
// The schema of each field is generated once, as data (constraint.go: a
// base type and constraints translated from the protoc-gen-validate rules
// in rules.go and types.go). Both the CUE text of the schema (schema.go,
// `legate schema`) and the Go checks of the fast path (fastschema.go,
// leaf.go), which settle the common values without CUE, are made from that
// data; no CUE text is read back. A Schema holds what the fast path learns
// as it runs and is shared by the stages of one process (NewStage); the
// package keeps no mutable state of its own. Policies are loaded
// (policyload.go), masked to what they read (policymask.go), evaluated
// (check.go) and reported with their own text (policytext.go).
//
// The package imports render and the CUE and protobuf libraries; it must
// not import a home, the revision engine or the xDS server.
package cue
