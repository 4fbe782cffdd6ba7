# legate's front door. `make` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
BIN       := $(CURDIR)/bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GOFLAGS_BUILD := -trimpath
# The test tools are linked without a symbol table or DWARF: nobody debugs
# them, and it halves the link of kube-apiserver (386 -> 200 s at load 20;
# docs/testing.md).
TOOLS_BUILD := $(GOFLAGS_BUILD) -ldflags='-s -w'

# One build configuration, static and with -trimpath, serves the tests,
# the legate binaries they build (test/e2e's, and hack/image's, which is
# what the image ships), bin/legate, golangci-lint's package loading and
# the tools that need no cgo (kube-apiserver, etcd, golangci-lint and
# controller-gen; their own releases are static too). On an empty build
# cache a package they share is then compiled once rather than once per
# configuration: hack/image's test no longer compiles all of legate again,
# and the tests reuse the standard library and the modules the tools
# compiled (docs/testing.md, "CI time"). Gitea keeps cgo (SQLite), and so
# do the race and fuzz passes (the race detector needs it).
STATIC := CGO_ENABLED=0 GOFLAGS='-trimpath $(GOFLAGS)'

# Test tuning. TEST_TIMEOUT bounds each package's test binary; FUZZTIME is the short
# fuzzing pass that `make test` includes. 20 minutes, not 10: on an empty
# build cache hack/image's test compiles all of legate again (CGO off,
# -trimpath: nothing shared with the test builds) beside the other
# packages' compiles, and took over 10 minutes (docs/testing.md).
TEST_TIMEOUT ?= 20m
# Test binaries are linked without a symbol table or DWARF (-s implies -w),
# as the tools are: a failing test's stack trace and the race detector's
# reports keep their function names and lines (they come from the
# runtime's own tables), and linking the 68 test binaries takes a quarter
# less CPU (341 -> 258 s; docs/testing.md).
TEST_LINK    := -ldflags=-s
# go test's own vet pass is off in make test: make lint runs govet (all of
# go test's checks and more) over the same packages and their tests, and
# the test passes' vet type-checked each package again, once per pass.
TEST_VET     := -vet=off
FUZZTIME     ?= 10s
TEST_FLAGS   ?=

# Tools. Each tool is built from a pinned module under test/tools and rebuilt
# only when that module's go.mod or go.sum changes. A prebuilt kube-apiserver
# and etcd are used when KUBEBUILDER_ASSETS is set; a gitea on PATH is used
# when present.
K8S_TOOLS   := test/tools/k8s
GITEA_TOOLS := test/tools/gitea
LINT_TOOLS  := test/tools/lint

ifdef KUBEBUILDER_ASSETS
ENVTEST_ASSETS := $(KUBEBUILDER_ASSETS)
ENVTEST_BINS   :=
else
ENVTEST_ASSETS := $(BIN)
ENVTEST_BINS   := $(BIN)/kube-apiserver $(BIN)/etcd
endif

GITEA_ON_PATH := $(shell command -v gitea 2>/dev/null)
ifneq ($(GITEA_ON_PATH),)
GITEA      := $(GITEA_ON_PATH)
GITEA_BINS :=
else
GITEA      := $(BIN)/gitea
GITEA_BINS := $(BIN)/gitea $(BIN)/gitea.root
endif

GOLANGCI_LINT  := $(BIN)/golangci-lint
CONTROLLER_GEN := $(BIN)/controller-gen

# Flux's GitRepository and OCIRepository CRDs, taken from the pinned
# source-controller module (the tests install them beside legate's own).
FLUX_SOURCE_CONTROLLER := v1.9.6
FLUX_CRDS := $(BIN)/flux-crds/$(FLUX_SOURCE_CONTROLLER)

# Everything the tests read to find the real components.
TEST_ENV := KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) \
	LEGATE_GITEA=$(GITEA) \
	LEGATE_GITEA_ROOT="$$(cat $(BIN)/gitea.root 2>/dev/null || true)" \
	LEGATE_FLUX_CRDS=$(FLUX_CRDS) \
	LEGATE_REQUIRE_TOOLS=1

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/legate.
	$(STATIC) $(GO) build $(GOFLAGS_BUILD) -ldflags '$(LDFLAGS)' -o $(BIN)/legate ./cmd/legate

# The container image, built without a Docker daemon (hack/image): static,
# non-root, linux/amd64 and linux/arm64, labelled with VERSION and COMMIT.
# Written as an OCI image layout to IMAGE_LAYOUT; pushed too when IMAGE is
# set (make image IMAGE=registry.example/legate:v0.3.0).
IMAGE_LAYOUT    ?= dist/image
IMAGE           ?=
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64

.PHONY: image
image: ## Build the container image (OCI layout in dist/image; IMAGE=REF pushes it).
	$(GO) run ./hack/image -version '$(VERSION)' -commit '$(COMMIT)' -platforms '$(IMAGE_PLATFORMS)' \
		-oci-layout '$(IMAGE_LAYOUT)' $(if $(IMAGE),-push '$(IMAGE)')

.PHONY: run
run: build ## Run legate serve on the embedded store, serving examples/quickstart.
	./hack/run.sh $(BIN)/legate

.PHONY: test test-plain
# go test gives the packages it is given first the first turns to compile,
# link and run: the packages that run for minutes, mostly waiting on the
# API servers and Gitea they start, go first, so that they do not start
# once the rest is done and run on alone (docs/testing.md, "CI time").
# go list and go test keep the patterns' order and name a package matched
# twice once.
SLOW_PKGS := ./test/controller ./test/fleet ./test/e2e
# The packages under test/bench whose tests are all benchmarks
# (test/bench/kube, test/bench/push): the plain pass would compile and
# link each, Kubernetes-sized, to run nothing. lint still type-checks them
# and make bench-* runs them. A package there with a Test, Fuzz or Example
# function is tested as any other.
BENCH_ONLY_PKGS := $(foreach d,$(wildcard test/bench/*/),$(if $(shell grep -lE '^func (Test|Fuzz|Example)' $(d)*_test.go 2>/dev/null),,./$(d:/=)))

test: tools ## Build the test tools, then run every test (envtest, Gitea, xDS e2e) and a short fuzz pass.
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-plain test-race
	@$(MAKE) --no-print-directory fuzz FUZZ_SKIP='$(FUZZ_SHORT_SKIP)' FUZZ_PARALLEL=1

# The plain pass and the race pass run side by side: the plain pass's
# longest packages (test/fleet, test/controller: minutes each, much of it
# waiting on the API servers they start) overlap the race pass's compiles
# and runs (docs/testing.md, "CI time"). --output-sync keeps each pass's
# output whole.
test-plain: ## Run the tests of every package but RACE_ONLY_PKGS and BENCH_ONLY_PKGS (make test's plain pass).
	pkgs=$$($(GO) list $(SLOW_PKGS) ./... | grep -vxF -f <($(GO) list $(RACE_ONLY_PKGS) $(BENCH_ONLY_PKGS))); \
	LEGATE_XDS_TEST_TRANSPORT=grpc $(TEST_ENV) $(STATIC) $(GO) test $(TEST_LINK) $(TEST_VET) -timeout $(TEST_TIMEOUT) -count=1 $(TEST_FLAGS) $$pkgs

# The packages where goroutines meet (the xDS server, the engine and its
# store, the fetch loops, the renderer's parallel decoding) run under the
# race detector (test-race). Those of RACE_ONLY_PKGS run there only: the
# plain pass of `make test` skips them, so their tests run once and are
# linked once (docs/testing.md, "CI time"). xds runs in both, on a
# transport each: the race pass serves its tests through the lean
# transport (xds/transport), as both homes do, and the plain pass through
# grpc-go's server (LEGATE_XDS_TEST_TRANSPORT=grpc), which --xds-transport
# grpc still offers. Its heap-cost tests measure grpc-go's buffers there,
# which the race detector's runtime changes (a stream's heap with the read
# guard broken is 67 KiB plain and 43 KiB under -race, under the 48 KiB
# bound), so they can fail only in the plain pass.
RACE_ONLY_PKGS := ./revisions/... ./standalone/... ./sources/... ./render/...
RACE_PKGS      := ./xds/... $(RACE_ONLY_PKGS)
# As SLOW_PKGS for the plain pass: the race pass's longest packages first.
RACE_SLOW_PKGS := ./revisions/kubestore ./sources/flux ./standalone

.PHONY: test-race
test-race: ## Run the concurrent packages' tests under the race detector.
	$(TEST_ENV) $(GO) test -race $(TEST_LINK) $(TEST_VET) -timeout $(TEST_TIMEOUT) -count=1 $(TEST_FLAGS) $(RACE_SLOW_PKGS) $(RACE_PKGS)

.PHONY: fuzz
fuzz-long: ## Run each fuzz target for minutes (FUZZTIME=5m by default); not part of make test or CI.
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(or $(LONG_FUZZTIME),5m)

# Mutation testing of the core packages and the Kubernetes home's with
# gremlins (pinned in test/tools/mutate, built on demand). Each mutant runs
# its own package's tests only: a decision must be pinned where it lives.
# Slow: not part of make test or CI. MUTATE_PKGS narrows it, e.g.
# make mutate MUTATE_PKGS=./revisions.
MUTATE_PKGS ?= ./revisions ./xds ./pipeline ./render ./sources/hooks ./forge \
	./webhook ./pki/kubepki ./sources/flux ./controller
GREMLINS := $(BIN)/gremlins

$(GREMLINS): test/tools/mutate/go.mod test/tools/mutate/go.sum
	cd test/tools/mutate && $(GO) build $(TOOLS_BUILD) -o $@ github.com/go-gremlins/gremlins/cmd/gremlins

.PHONY: mutate fuzz-long
mutate: $(GREMLINS) ## Mutation testing of the core packages (slow; results go in docs/testing.md).
	@for pkg in $(MUTATE_PKGS); do \
		echo "mutate $$pkg"; \
		$(GREMLINS) unleash --workers 1 --timeout-coefficient 3 --exclude-files '_test\.go$$' $$pkg || exit 1; \
	done

# make test's fuzz pass leaves out the two targets whose instrumented build
# is a configuration of its own as large as a test pass: go test -fuzz
# instruments every package its test binary links, so FuzzDecode compiles
# the whole renderer again (CUE, Envoy's protobuf types) and
# FuzzAdmissionReview the Kubernetes client: on an empty build cache the
# eight targets need 572 s of CPU, the other six 144 s (docs/testing.md,
# "The short fuzz pass"). Their seeds run as tests in every pass; make
# fuzz and make fuzz-long fuzz them.
FUZZ_SHORT_SKIP := ./render:FuzzDecode ./webhook:FuzzAdmissionReview
FUZZ_SKIP ?=
# make test's short pass fuzzes with one worker: its 10 s a target are
# wall time, and a second worker doubled its CPU (142 -> 87 s for the
# seven targets, 79-81 s of wall time either way; docs/testing.md, "The
# short fuzz pass"). make fuzz and make fuzz-long use every core.
FUZZ_PARALLEL ?=

fuzz: ## Run each fuzz target for FUZZTIME (but those in FUZZ_SKIP, as ./pkg:FuzzName).
	@for spec in $$(./hack/fuzz-targets.sh); do \
		case " $(FUZZ_SKIP) " in *" $$spec "*) echo "fuzz $$spec: left to make fuzz (FUZZ_SKIP)"; continue;; esac; \
		pkg=$${spec%%:*}; fn=$${spec##*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
		GOFLAGS='$(TEST_LINK) $(GOFLAGS)' GO=$(GO) FUZZ_PARALLEL='$(FUZZ_PARALLEL)' ./hack/fuzz-one.sh $$pkg $$fn $(FUZZTIME); \
	done

.PHONY: bench
bench: build tools ## Run every benchmark: go test -bench of the packages, then the harnesses below.
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./render/... ./revisions/... ./sources/git/...
	@$(MAKE) --no-print-directory bench-commit bench-push bench-kube bench-fanout

.PHONY: bench-kube
bench-kube: tools ## The Kubernetes home on envtest: EnvoyConfig update-to-ACK, NACK-to-Rollback condition, API server writes per publication, admission latency, proxy certificates at 1 000 node IDs.
	$(TEST_ENV) $(GO) test ./test/bench/kube -run '^$$' -bench 'EnvoyConfig|WritesPerPublication|Replica|Admission$$' -benchtime 50x -timeout 30m
	$(TEST_ENV) $(GO) test ./test/bench/kube -run '^$$' -bench 'AdmissionBurst' -benchtime 1x -timeout 30m
	$(TEST_ENV) $(GO) test ./test/bench/kube -run '^$$' -bench 'RollbackSeenByKubectl' -benchtime 5x -timeout 30m
	$(TEST_ENV) $(GO) test ./test/bench/kube -run '^$$' -bench ProxyCertificates -benchtime 3x -timeout 30m
	$(TEST_ENV) $(GO) test ./test/bench/kube -run '^$$' -bench ControllerMemory -benchtime 1x -timeout 60m

.PHONY: bench-fanout
bench-fanout: ## xDS fan-out vs bare go-control-plane (slow: ~20 min), writes docs/bench-fanout.svg.
	$(GO) run ./test/bench/fanout -streams 100,1000,10000 -clusters 100,1000 -publishes 5 -timeout 20m -out test/bench/fanout/results.json
	$(GO) run ./test/bench/fanout plot -in test/bench/fanout/results.json -svg docs/bench-fanout.svg

.PHONY: bench-commit
bench-commit: ## Commit-to-ACK with a 1 000-route config, polling baseline, memory; writes docs/bench-commit.svg.
	$(GO) run ./test/bench/commit -routes 1000 -commits 50 -revisions 1000 -poll-commits 20 -out test/bench/commit/results.json
	$(GO) run ./test/bench/commit plot -in test/bench/commit/results.json -svg docs/bench-commit.svg

.PHONY: bench-push
bench-push: tools ## Push-to-ACK through a real Gitea webhook vs polling.
	$(TEST_ENV) $(GO) test ./test/bench/push -run '^$$' -bench . -benchtime 50x -timeout 30m

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(STATIC) $(GOLANGCI_LINT) run ./...

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code, CRDs, RBAC and the API reference.
	$(CONTROLLER_GEN) object paths=./config/...
	$(CONTROLLER_GEN) crd paths=./config/... output:crd:artifacts:config=config/crd
	$(CONTROLLER_GEN) rbac:roleName=legate paths=./controller/... output:rbac:artifacts:config=config/rbac
	go run ./hack/apidocs config/crd docs/api.md
	@# The Helm chart carries the same CRDs and ClusterRole rules (test/helm checks).
	rm -f charts/legate/crds/*.yaml && cp config/crd/legate.dev_*.yaml charts/legate/crds/
	{ printf '# A copy of the rules of config/rbac/role.yaml (make generate writes it);\n# test/helm fails when they differ.\n'; \
	  awk 'f; /^rules:/ {f = 1}' config/rbac/role.yaml; } > charts/legate/files/role-rules.yaml

.PHONY: verify
verify: ## Fail when go mod tidy or make generate would change the tree.
	./hack/verify.sh

.PHONY: tools
tools: $(ENVTEST_BINS) $(GITEA_BINS) $(GOLANGCI_LINT) $(CONTROLLER_GEN) $(FLUX_CRDS) browser ## Build the pinned test tools into bin/ (cached).

# The status page is tested in a real headless browser: Debian's chromium,
# installed when missing and the machine allows it (root with apt-get).
.PHONY: browser
browser:
	@if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing Debian's chromium for the status page tests"; \
			apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null; }; \
		else \
			echo "chromium is missing: install it (apt-get install -y chromium) for the status page tests"; \
		fi; \
	fi

$(BIN)/kube-apiserver: $(K8S_TOOLS)/go.mod $(K8S_TOOLS)/go.sum
	cd $(K8S_TOOLS) && $(STATIC) $(GO) build $(TOOLS_BUILD) -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(BIN)/etcd: $(K8S_TOOLS)/go.mod $(K8S_TOOLS)/go.sum
	cd $(K8S_TOOLS) && $(STATIC) $(GO) build $(TOOLS_BUILD) -o $@ go.etcd.io/etcd/server/v3

# Gitea links the system's SQLite (Debian's libsqlite3-dev, built with the
# unlock notification Gitea's tag asks for) when its header is there:
# compiling the copy go-sqlite3 bundles is about 50 s of CPU on an empty
# build cache. Without the header, or when that link fails, the bundled
# copy is built.
#
# Gitea's own modules (every package outside the standard library, named
# by the first element of its path) are compiled without optimisation or
# inlining (-N -l): it is a test fixture serving a few repositories, and
# this takes about a quarter off its compile on an empty build cache
# (docs/testing.md, "Where a cold run's CPU goes"). The standard library
# keeps the flags of the other builds, so the packages Gitea shares with
# them are still compiled once.
GITEA_TAGS := sqlite sqlite_unlock_notify
$(BIN)/gitea: $(GITEA_TOOLS)/go.mod $(GITEA_TOOLS)/go.sum
	cd $(GITEA_TOOLS) && unoptimised=() && \
	for root in $$($(GO) list -deps -tags '$(GITEA_TAGS)' code.gitea.io/gitea | awk -F/ '$$1 ~ /\./ {print $$1}' | sort -u); do \
		unoptimised+=("-gcflags=$$root/...=-N -l"); done && \
	{ { test -f /usr/include/sqlite3.h && \
		$(GO) build $(TOOLS_BUILD) "$${unoptimised[@]}" -tags '$(GITEA_TAGS) libsqlite3' -o $@ code.gitea.io/gitea; } || \
		$(GO) build $(TOOLS_BUILD) "$${unoptimised[@]}" -tags '$(GITEA_TAGS)' -o $@ code.gitea.io/gitea; }

# Gitea reads its templates and options from its source tree at run time.
$(BIN)/gitea.root: $(GITEA_TOOLS)/go.mod $(GITEA_TOOLS)/go.sum
	@mkdir -p $(BIN)
	cd $(GITEA_TOOLS) && $(GO) mod download code.gitea.io/gitea && $(GO) list -m -f '{{.Dir}}' code.gitea.io/gitea > $@

$(GOLANGCI_LINT): $(LINT_TOOLS)/go.mod $(LINT_TOOLS)/go.sum
	cd $(LINT_TOOLS) && $(STATIC) $(GO) build $(TOOLS_BUILD) -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(FLUX_CRDS):
	@rm -rf $@.tmp && mkdir -p $@.tmp
	dir=$$(cd / && GOFLAGS= $(GO) mod download -json github.com/fluxcd/source-controller@$(FLUX_SOURCE_CONTROLLER) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
		test -n "$$dir" && for kind in gitrepositories ocirepositories; do \
			install -m 0644 "$$dir/config/crd/bases/source.toolkit.fluxcd.io_$$kind.yaml" $@.tmp/; done
	mv $@.tmp $@

$(CONTROLLER_GEN): $(LINT_TOOLS)/go.mod $(LINT_TOOLS)/go.sum
	cd $(LINT_TOOLS) && $(STATIC) $(GO) build $(TOOLS_BUILD) -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen
