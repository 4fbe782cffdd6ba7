// Package core assembles what both homes run: the revision engine, the xDS
// server, SDS, the pipeline and the commit-status feedback, built in one
// order from one Options by New, and the Tuning every knob of both homes
// lives in (registered once as flags by AddFlags, documented once in
// docs/tuning.md).
//
// A home (standalone, controller) supplies only what differs between
// them: its store, its secret and endpoint resolvers, its xDS authorizer,
// its render options and source scope, its commit-status reporters, and
// its scheduling. It never builds one of these components by hand, so the
// two homes cannot drift apart again.
//
// core imports no home.
package core
