// Package promtest holds the Prometheus check's tests against a real PromQL
// engine: Prometheus' own promql.Engine over its test storage, behind the
// /api/v1/query contract. It is a package of its own so that the
// prometheus/prometheus module links into this test binary only, not into
// legate's binary nor into the analysis package's tests. It has no
// non-test code.
package promtest
