#!/usr/bin/env bash
# Fails when `go mod tidy` (in every module of the repo) or `make generate`
# would change the tree, or when the tests and the tools built from
# test/tools/k8s and test/tools/lint compile a shared module at two
# versions. No check touches a file that is already right, so the tools
# built from test/tools/* are not rebuilt afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
for mod in . test/tools/k8s test/tools/gitea test/tools/lint test/tools/mutate; do
  if ! out=$(cd "$mod" && go mod tidy -diff 2>&1); then
    echo "verify: go mod tidy would change $mod/go.mod or go.sum:" >&2
    echo "$out" >&2
    status=1
  fi
done

# The tests and the tools compile the modules they share at one version
# (a cold build then compiles those packages once).
if ! ./hack/tools-aligned.sh; then
  status=1
fi

snapshot() { git status --porcelain=v1 --untracked-files=all -- . ':!bin' ':!.cache'; git diff -- . ':!bin' ':!.cache' | sha256sum; }
before=$(snapshot)
make --no-print-directory generate >/dev/null
after=$(snapshot)
if [ "$before" != "$after" ]; then
  echo "verify: make generate changed the tree; commit the result:" >&2
  git status --short -- . ':!bin' >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "verify: go.mod files tidy and aligned, generated files up to date"
exit "$status"
