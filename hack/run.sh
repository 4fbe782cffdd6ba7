#!/usr/bin/env bash
# make run: legate's main job on its embedded default. It turns
# examples/quickstart into a local Git repository (once; later runs keep your
# commits there) and runs `legate serve` against it with the embedded store.
set -euo pipefail
legate="${1:?usage: run.sh path/to/legate}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${LEGATE_RUN_DIR:-$root/.cache/run}"
repo="$work/config-repo"
state="$work/state"

if [ ! -d "$repo/.git" ]; then
  mkdir -p "$repo"
  cp -R "$root/examples/quickstart/." "$repo/"
  git -C "$repo" init -q -b main
  git -C "$repo" add -A
  git -C "$repo" -c user.name="legate quickstart" -c user.email="quickstart@legate.invalid" \
    commit -q -m "quickstart: node edge from examples/quickstart"
fi

cat <<EOT
legate: serving the config repository $repo (branch main, node "edge")
  xDS (ADS):   127.0.0.1:18000      status page: http://127.0.0.1:8080/  (JSON: /api/v1/nodes)
  Point Envoy at it with a bootstrap whose node.id is "edge" and whose ADS
  cluster is 127.0.0.1:18000 (examples/envoy/plaintext/bootstrap.yaml), or a grpc-go xDS
  client with GRPC_XDS_BOOTSTRAP naming such a file. Commit to the repository
  above and legate publishes within --interval (5s here); try a broken commit
  to see it rejected. \`$legate status\` shows nodes, revisions and proxies.
  Calls that change state (legate untaint, POST .../fetch) need the admin token
  legate keeps in $state/admin-token:
    export LEGATE_TOKEN_FILE=$state/admin-token
EOT
exec "$legate" serve --git-url "$repo" --git-ref main --state-dir "$state" \
  --interval 5s --xds-addr 127.0.0.1:18000 --http-addr 127.0.0.1:8080 "${@:2}"
