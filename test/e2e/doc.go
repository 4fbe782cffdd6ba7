// Package e2e holds end-to-end tests of `legate serve`: the binary runs as
// a subprocess against a local Git repository, grpc-go's xDS client (a real
// third-party proxy) and raw ADS streams consume what it serves, and real
// RPCs show which configuration a client runs. The tests live in *_test.go
// files; `go test ./test/e2e/...` builds the binary once.
package e2e
