#!/bin/sh
# Runs the engine I/O benchmarks twice in one go: on the engine before
# issue 24 (commit 5b12c81, whose lock was held across every store write
# and publication) and on this tree. The older tree is exported to a
# temporary directory with this package's benchmark copied in: the
# benchmarks use only the engine's exported API, which both share.
#
#	test/bench/engineio/run.sh [go test flags, e.g. -bench Reads]
set -eu
root=$(git rev-parse --show-toplevel)
base=$(mktemp -d)
trap 'rm -rf "$base"' EXIT
git -C "$root" archive 5b12c81 | tar -x -C "$base"
mkdir -p "$base/test/bench/engineio"
# where_test.go measures where the time goes (CPU per process, API
# calls) with what both trees have.
cp "$root/test/bench/engineio/engineio_test.go" "$root/test/bench/engineio/where_test.go" "$base/test/bench/engineio/"
# kube-apiserver and etcd for envtest come from the checkout's bin/.
export KUBEBUILDER_ASSETS="${KUBEBUILDER_ASSETS:-$(readlink -f "$root/bin")}"
bench=${*:--bench .}
for tree in "$base" "$root"; do
	if [ "$tree" = "$base" ]; then echo "== engine at 5b12c81 (before)"; else echo "== engine of this tree ($(git -C "$root" rev-parse --short HEAD))"; fi
	# shellcheck disable=SC2086 # bench holds several flags
	(cd "$tree" && go test ./test/bench/engineio -run '^$' $bench -benchtime 1x -timeout 60m)
done
