# fedmesh: two commands matter — `make demo` and `make test`. Everything else is a step of those.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X github.com/fedmesh/fedmesh/pkg/version.gitVersion=$(VERSION) \
           -X github.com/fedmesh/fedmesh/pkg/version.gitCommit=$(COMMIT) \
           -X github.com/fedmesh/fedmesh/pkg/version.buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

# Real etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, helm and controller-gen, built from the Go
# module proxy into a cache outside the repo (see hack/build-binaries.sh).
FEDMESH_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/fedmesh
export FEDMESH_CACHE
FEDMESH_BIN_DIR := $(FEDMESH_CACHE)/bin
export FEDMESH_BIN_DIR

GO_TEST_FLAGS ?= -count=1 -timeout 40m

.PHONY: all build binaries generate test unit verify bench bench-smoke demo clean help

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build fedmesh's binaries into bin/ (version stamped)
	go build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

binaries: ## build the real Kubernetes binaries the tests and demo run (cached; first run takes minutes)
	hack/build-binaries.sh >/dev/null

generate: binaries ## regenerate deepcopy code and CRDs from pkg/apis
	hack/generate.sh

verify: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...

test: binaries verify ## everything: unit tests and e2e tests against real API servers
	go test $(GO_TEST_FLAGS) ./...

unit: binaries ## the tests of pkg/ only, without test/ (some of them start API servers too)
	go test $(GO_TEST_FLAGS) ./pkg/...

# SCENARIO=name[,name] runs some scenarios; SCALE=tiny|small|full sets object counts (full: the issue's 100k pods
# and 10k templates, which takes hours on 2 cores); REPS repetitions of every variant, interleaved; VARIANTS=name[,name]
# runs only those variants of a scenario.
SCENARIO ?=
VARIANTS ?=
SCALE ?= small
REPS ?= 3

bench: binaries ## benchmark suite against real API servers: writes bench/report.md, bench/report.json, bench/*.png
	go run ./test/bench -scale $(SCALE) -reps $(REPS) $(if $(SCENARIO),-scenario $(SCENARIO)) $(if $(VARIANTS),-variants $(VARIANTS)) -out bench
	go test -run '^$$' -bench . ./pkg/...

bench-smoke: binaries ## every benchmark scenario at tiny scale, as CI runs it (seconds to a minute)
	go test -count=1 -run TestEveryScenarioAtTinyScale ./test/bench

demo: binaries ## the whole thing locally: host + 2 members, manager, 2-shard federator, an app propagated; Ctrl-C stops it
	go run ./test/demo

clean: ## remove bin/ (the binary cache in $(FEDMESH_CACHE) stays)
	rm -rf bin/

# Images and the kind path: for users with Docker (neither `make demo` nor `make test` needs them).
IMAGE ?= ghcr.io/fedmesh
IMAGE_TAG ?= $(VERSION)

.PHONY: images kind-up kind-down

images: ## build the manager, federator and proxy images ($(IMAGE)/<name>) with Docker, stamped like `make build`
	@command -v docker >/dev/null || { echo "make images needs Docker: no 'docker' command found in PATH" >&2; exit 1; }
	@docker info >/dev/null 2>&1 || { echo "make images needs Docker: 'docker info' failed; is the Docker daemon running?" >&2; exit 1; }
	for target in manager federator proxy; do \
		docker build --build-arg LDFLAGS="$(LDFLAGS)" --target $$target -t $(IMAGE)/$$target:$(IMAGE_TAG) . || exit 1; \
	done

kind-up: images ## kind clusters fedmesh-host + 2 members with the chart installed and the demo app propagated
	IMAGE=$(IMAGE) IMAGE_TAG=$(IMAGE_TAG) hack/kind/up.sh

kind-down: ## delete the kind clusters of kind-up
	hack/kind/down.sh
