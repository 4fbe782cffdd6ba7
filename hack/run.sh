#!/usr/bin/env bash
# make run: start legate's main job on its embedded default.
set -euo pipefail
legate="${1:?usage: run.sh path/to/legate}"
if ! "$legate" help serve >/dev/null 2>&1 || ! "$legate" serve --help >/dev/null 2>&1; then
  echo "legate serve is not available yet (see the feature status table in README.md)."
  exit 0
fi
