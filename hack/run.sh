#!/usr/bin/env bash
# make run: legate's main job on its embedded default. It turns
# examples/quickstart (node "edge", for Envoy) and examples/grpc (node
# "grpc-client", for proxyless grpc-go) into local Git repositories (once;
# later runs keep your commits there), writes a bootstrap for each client and
# runs `legate serve` against both with the embedded store.
set -euo pipefail
legate="${1:?usage: run.sh path/to/legate [legate serve flags]}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${LEGATE_RUN_DIR:-$root/.cache/run}"
repo="$work/config-repo"
grpc_repo="$work/grpc-repo"
state="$work/state"

# seed DIR FROM MESSAGE: make DIR a Git repository holding FROM's files.
seed() {
  if [ ! -d "$1/.git" ]; then
    mkdir -p "$1"
    cp -R "$2/." "$1/"
    git -C "$1" init -q -b main
    git -C "$1" add -A
    git -C "$1" -c user.name="legate quickstart" -c user.email="quickstart@legate.invalid" \
      commit -q -m "$3"
  fi
}
seed "$repo" "$root/examples/quickstart" "quickstart: node edge from examples/quickstart"
mkdir -p "$work/grpc-src" && cp "$root"/examples/grpc/*.yaml "$work/grpc-src/"
seed "$grpc_repo" "$work/grpc-src" "grpc: node grpc-client from examples/grpc"

# The xDS and HTTP addresses, as overridden by the flags given.
xds_addr=127.0.0.1:18000
http_addr=127.0.0.1:8080
args=("${@:2}")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --xds-addr) xds_addr="${args[i+1]}" ;;
    --xds-addr=*) xds_addr="${args[i]#*=}" ;;
    --http-addr) http_addr="${args[i+1]}" ;;
    --http-addr=*) http_addr="${args[i]#*=}" ;;
  esac
done
# The commands printed below talk to this server, wherever it listens.
server=""
if [ "$http_addr" != 127.0.0.1:8080 ]; then
  server=" --server $http_addr"
fi
"$legate" bootstrap envoy --node edge --xds-addr "$xds_addr" -o "$work/envoy-bootstrap.yaml" 2>/dev/null
"$legate" bootstrap grpc --node grpc-client --pod quickstart --xds-addr "$xds_addr" -o "$work/grpc-bootstrap.json" 2>/dev/null

cat <<EOT
legate: serving the config repository $repo (node "edge")
        and $grpc_repo (node "grpc-client"), branch main
  xDS (ADS):   $xds_addr      status page: http://$http_addr/  (JSON: /api/v1/nodes)

  Envoy (node edge):
    envoy -c $work/envoy-bootstrap.yaml
  grpc-go, the runnable client of examples/grpc (node grpc-client), in two shells:
    go run ./examples/grpc/greeter serve
    GRPC_XDS_BOOTSTRAP=$work/grpc-bootstrap.json go run ./examples/grpc/greeter call -every 2s

  Commit to a repository above and legate publishes within 5s; try a broken
  commit to see it rejected.
    $legate${server} status                 # sources and nodes at a glance
    $legate${server} status edge            # one node's history and proxies
    $legate${server} reconcile default      # fetch now and wait for the verdict
  Calls that change state (reconcile, suspend, untaint, prune) need the admin
  token legate keeps in $state/admin-token:
    export LEGATE_TOKEN_FILE=$state/admin-token
EOT
exec "$legate" serve --git-url "$repo" --git-ref main --state-dir "$state" \
  --source "name=grpc,git=$grpc_repo,branch=main,interval=5s" \
  --interval 5s --xds-addr 127.0.0.1:18000 --http-addr 127.0.0.1:8080 "${@:2}"
