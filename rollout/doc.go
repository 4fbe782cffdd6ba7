// Package rollout holds progressive rollout's decisions: the policy a
// source declares (steps of proxies, nodes and pauses, gates, what to do on
// failure), its validation, the stable bucket that splits a node's proxies
// between the stable revision and the candidate, and the state machine that
// moves a rollout from step to step.
//
// Everything here is pure: no clock, no goroutine, no I/O. The revision
// engine feeds the machine what its proxies did and acts on the answer
// (which share of proxies to serve the candidate, promote, roll back), and
// the analysis checks (package rollout/analysis) plug in through Analyzer.
// The package imports nothing else of legate so that every stage and both
// homes may use it.
package rollout
