// Package push benchmarks push-to-ACK: the time from `git push` to a real
// Gitea until an xDS client has ACKed the configuration of the pushed
// commit, with legate told by Gitea's push webhook versus legate polling
// every second. Run it with
//
//	go test ./test/bench/push -run '^$' -bench . -benchtime 50x -timeout 30m
//
// It needs bin/gitea (`make tools`); docs/benchmarks.md has the figures.
package push
