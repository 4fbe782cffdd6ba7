#!/usr/bin/env bash
# Runs one fuzz target: hack/fuzz-one.sh PKG FUNC FUZZTIME.
#
# Go's fuzzing engine may end a time-bounded run with "context deadline
# exceeded" and no failing input when the machine is loaded as the time
# runs out (the coordinator's deadline fires while a worker still runs
# an input). That is not a finding: such a run is tried once more. Any
# run that writes a failing input, or fails otherwise, fails.
#
# Minimizing a new interesting input may take up to a minute by default
# (-fuzzminimizetime 60s), uncounted: one minimization could eat the whole
# short window (FuzzExtract stalled at a few dozen executions), so it is
# bounded to 2 s; failing inputs are still written, minimized or not.
#
# FUZZ_PARALLEL, when set, is the number of fuzzing workers (go test
# -parallel; GOMAXPROCS otherwise).
set -uo pipefail
pkg=$1 fn=$2 fuzztime=$3
for attempt in 1 2; do
  out=$("${GO:-go}" test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s ${FUZZ_PARALLEL:+-parallel "$FUZZ_PARALLEL"} "$pkg" 2>&1)
  rc=$?
  printf '%s\n' "$out"
  if [ "$rc" -eq 0 ]; then
    exit 0
  fi
  if [ "$attempt" -eq 1 ] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
    echo "fuzz-one: $fn: the fuzzing engine timed out without a failing input; running it again"
    continue
  fi
  exit "$rc"
done
