#!/usr/bin/env bash
# Fails when `go mod tidy` (in every module of the repo) or `make generate`
# would change the tree.
set -euo pipefail
cd "$(dirname "$0")/.."

snapshot() { git status --porcelain=v1 --untracked-files=all -- . ':!bin' ; git diff -- . ':!bin' | sha256sum; }
before=$(snapshot)

for mod in . test/tools/k8s test/tools/gitea test/tools/lint; do
  (cd "$mod" && go mod tidy)
done
make --no-print-directory generate >/dev/null

after=$(snapshot)
if [ "$before" != "$after" ]; then
  echo "verify: the tree changed after go mod tidy / make generate; commit the result:" >&2
  git status --short -- . ':!bin' >&2
  git --no-pager diff --stat >&2
  exit 1
fi
echo "verify: go.mod files tidy, generated files up to date"
