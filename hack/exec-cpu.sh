#!/usr/bin/env bash
# A `go test -exec` wrapper that logs each test binary's wall time and CPU
# time (its own and that of the children it waited for: the API servers,
# etcds and Gitea a test starts) to EXEC_CPU_LOG, one line a package:
#
#   make test TEST_FLAGS=-exec=$PWD/hack/exec-cpu.sh EXEC_CPU_LOG=/tmp/cpu.log
#   sort -k2 -g -r /tmp/cpu.log | head
#
# Fields: wall seconds, CPU seconds (user + system), the package's directory.
set -uo pipefail
log=${EXEC_CPU_LOG:-/tmp/exec-cpu.log}
start=$(date +%s.%N)
"$@"
rc=$?
read -r _ _ cutime cstime < <(awk '{print $14, $15, $16, $17}' /proc/$$/stat)
ticks=$(getconf CLK_TCK)
awk -v s="$start" -v e="$(date +%s.%N)" -v u="$cutime" -v y="$cstime" -v t="$ticks" -v d="$PWD" \
  'BEGIN { printf "%.1f %.1f %s\n", e - s, (u + y) / t, d }' >> "$log"
exit "$rc"
