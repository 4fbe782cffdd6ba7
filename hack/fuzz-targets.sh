#!/usr/bin/env bash
# Lists every fuzz target as "./pkg/dir:FuzzName", one per line.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -co --exclude-standard '*_test.go' | while read -r f; do
  { grep -oE '^func Fuzz[A-Za-z0-9_]+\(' "$f" || true; } | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | while read -r fn; do
    echo "./$(dirname "$f"):$fn"
  done
done | sort -u
