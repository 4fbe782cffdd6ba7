#!/usr/bin/env bash
# Checks that legate's tests and the tools built from test/tools/k8s and
# test/tools/lint compile every module they share at one version, so that a
# cold build compiles each shared package once: the build cache keys a
# package by its module's version (the builds are static and -trimpath
# alike: STATIC and TOOLS_BUILD in the Makefile), so kube-apiserver's
# k8s.io/api v0.37.0 and the tests' v0.37.2 are two compiles of about 10 MB
# of generated code each. Gitea is left out: it builds with cgo, which
# changes every package above `net`.
#
#   hack/tools-aligned.sh        fail, naming each module, when they differ
#   hack/tools-aligned.sh -fix   raise each lower side to the higher version
#                                (go get, or the replace of a Kubernetes
#                                staging module), tidy, and check again
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

fix=false
[ "${1:-}" = -fix ] && fix=true

# Module path and version of every non-main module a build compiles.
compiled() {
  local dir=$1; shift
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-trimpath go list -deps \
    -f '{{with .Module}}{{if not .Main}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}{{end}}' "$@" |
    sort -u | grep .)
}

# The higher of two module versions (semver with Go's pseudo-versions,
# which sort as prereleases of the next patch).
higher() {
  printf '%s\n%s\n' "$1" "$2" | go run ./hack/semvermax
}

mismatches() {
  local tmp
  tmp=$(mktemp -d)
  compiled . -test ./... >"$tmp/tests"
  compiled test/tools/k8s k8s.io/kubernetes/cmd/kube-apiserver go.etcd.io/etcd/server/v3 >"$tmp/k8s"
  compiled test/tools/lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint sigs.k8s.io/controller-tools/cmd/controller-gen >"$tmp/lint"
  for tool in k8s lint; do
    join "$tmp/tests" "$tmp/$tool" | awk -v tool="$tool" '$2 != $3 {print $1, $2, tool, $3}'
  done
  join "$tmp/k8s" "$tmp/lint" | awk '$2 != $3 {print $1, "k8s", $2, "lint", $3}' |
    awk '{print $1, $3, "lint-vs-k8s", $5}'
  rm -rf "$tmp"
}

dir_of() {
  case $1 in
    tests) echo . ;;
    k8s) echo test/tools/k8s ;;
    lint) echo test/tools/lint ;;
  esac
}

raise() {
  local side=$1 mod=$2 version=$3 dir
  dir=$(dir_of "$side")
  if grep -qE "^[[:space:]]*${mod//./\\.} => " "$dir/go.mod"; then
    (cd "$dir" && go mod edit -replace="$mod=$mod@$version")
  else
    (cd "$dir" && go get "$mod@$version")
  fi
}

for round in 1 2 3 4 5; do
  out=$(mismatches)
  if [ -z "$out" ]; then
    echo "tools-aligned: the tests, test/tools/k8s and test/tools/lint compile every shared module at one version"
    exit 0
  fi
  if ! $fix; then
    echo "tools-aligned: these modules are compiled at two versions, so a cold build compiles their packages twice:" >&2
    # module, tests' version (or k8s's), tool, tool's version
    while read -r mod a side b; do
      case $side in
        lint-vs-k8s) echo "  $mod: test/tools/k8s $a, test/tools/lint $b" >&2 ;;
        *) echo "  $mod: the tests $a, test/tools/$side $b" >&2 ;;
      esac
    done <<<"$out"
    echo "run hack/tools-aligned.sh -fix (it raises the lower side and tidies)" >&2
    exit 1
  fi
  echo "tools-aligned: round $round"
  while read -r mod a side b; do
    top=$(higher "$a" "$b")
    case $side in
      lint-vs-k8s) lo_a=k8s lo_b=lint ;;
      *) lo_a=tests lo_b=$side ;;
    esac
    if [ "$top" != "$a" ]; then raise "$lo_a" "$mod" "$top"; fi
    if [ "$top" != "$b" ]; then raise "$lo_b" "$mod" "$top"; fi
  done <<<"$out"
  for dir in . test/tools/k8s test/tools/lint; do (cd "$dir" && go mod tidy); done
done
echo "tools-aligned: still not aligned after five rounds" >&2
exit 1
