# The Makefile mirrors CI: .ci/run calls these targets.
SHELL := /bin/bash
GO ?= go
BIN := bin/backflow
CORE_BIN := bin/backflow-core
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/backflow (runs the values commands, hands every other command to the core beside it) and bin/backflow-core
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/backflow
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(CORE_BIN) ./cmd/backflow-core

IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_REPO ?= ghcr.io/backflow-dev/backflow
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt

.PHONY: image
image: ## Build the multi-platform OCI image without Docker: bin/image (OCI layout) and bin/backflow-image-OS-ARCH.tar (docker load)
	rm -rf bin/image
	set -e; for p in $(IMAGE_PLATFORMS); do \
	  for c in backflow backflow-core; do \
	    CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/$${p%/*}-$${p#*/}/$$c ./cmd/$$c; \
	  done; \
	done
	$(GO) run ./cmd/backflow-image --layout bin/image --tag $(IMAGE_REPO) \
	  --version $(VERSION) --revision $(REVISION) --created $(SOURCE_DATE_EPOCH) --ca-certs $(CA_CERTS) \
	  $(foreach p,$(IMAGE_PLATFORMS),--binary $(p)=bin/$(subst /,-,$(p))/backflow --core $(p)=bin/$(subst /,-,$(p))/backflow-core --tarball $(p)=bin/backflow-image-$(subst /,-,$(p)).tar)

.PHONY: demo
demo: build ## Run the whole round trip against an in-process local hub (needs git; loopback only)
	@command -v git >/dev/null 2>&1 || { echo "make demo needs git: install it (Debian/Ubuntu: apt-get install git)"; exit 1; }
	./$(BIN) demo

.PHONY: demo-confighub
demo-confighub: build ## Run the round trip with the desired state in a ConfigHub Unit (the ConfigHub stand-in; loopback only)
	@command -v git >/dev/null 2>&1 || { echo "make demo-confighub needs git: install it (Debian/Ubuntu: apt-get install git)"; exit 1; }
	./$(BIN) demo --confighub

.PHONY: fmt-check
fmt-check: ## Fail when a Go file is not gofmt-clean
	@files=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$files" ]; then echo "gofmt needed:"; echo "$$files"; exit 1; fi

.PHONY: vet
vet: ## Run go vet
	$(GO) vet ./...

.PHONY: test
test: fmt-check vet ## gofmt check, go vet, and the race-enabled test suite
	$(GO) test -race -count=1 ./...

.PHONY: bench
bench: ## Run the benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: tidy-check
tidy-check: ## Fail when go.mod or go.sum is not tidy
	$(GO) mod tidy -diff

.PHONY: render
render: ## Run the render witness's chart-mapping search over the real redis chart (no -race)
	$(GO) test -count=1 -run '^TestMap' ./internal/render/

.PHONY: e2e
e2e: ## Live round trip on a real kube-apiserver and etcd on loopback (installs etcd-server; caches kube-apiserver and the Flux controllers in ~/.cache/backflow)
	./testdata/e2e/run.sh

.PHONY: corpus
corpus: ## Edit every scalar leaf of every corpus values file, write back every leaf of every corpus kustomize build (no -race; slow)
	$(GO) test -count=1 -v -timeout 30m -run '^TestCorpus$$' ./internal/values/ -args -corpus
	$(GO) test -count=1 -v -timeout 30m -run '^TestCorpus(Manifests)?$$' ./internal/kustomize/builder/ -args -corpus

FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME each (seeds from testdata/); print executions and crashes
	@mkdir -p bin
	GO=$(GO) ./internal/reliability/fuzz.sh $(FUZZTIME) bin/fuzz-figures.md

.PHONY: reliability
reliability: ## Run the reliability and security suite in full (no -race, larger counts); print its figures
	@mkdir -p bin
	set -o pipefail; $(GO) test -count=1 -timeout 30m -v ./internal/reliability/ -args -full -figures $(CURDIR)/bin/reliability-figures.md 2>&1 \
		| tee bin/reliability.log | grep -E '^(--- |ok|FAIL|PASS)|FIGURE' \
		|| { echo "== what the failing cases said (whole log: bin/reliability.log)"; \
		     grep -vE 'FIGURE' bin/reliability.log | grep -E -A8 '^[[:space:]]+[a-z0-9_]+_test\.go:[0-9]+:|^panic:' | head -300; exit 1; }
	@cat bin/reliability-figures.md

ACTIONLINT_VERSION := v1.7.12
ACTIONLINT := $(HOME)/.cache/backflow/tools/actionlint-$(ACTIONLINT_VERSION)

.PHONY: actionlint
actionlint: ## Check the GitHub workflows with actionlint (installed once into ~/.cache/backflow/tools; uses shellcheck when installed)
	@test -x $(ACTIONLINT) || { mkdir -p $(dir $(ACTIONLINT)) && GOBIN=$$(mktemp -d) && GOBIN=$$GOBIN $(GO) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION) && mv $$GOBIN/actionlint $(ACTIONLINT); }
	$(ACTIONLINT) .github/workflows/*.yml

GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(HOME)/.cache/backflow/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)

.PHONY: lint
lint: ## Run golangci-lint with .golangci.yml on the module and the e2e module (unused, revive, errorlint, lll at 120 outside tests, depguard for archtest's arrows; installed once into ~/.cache/backflow/tools)
	@test -x $(GOLANGCI_LINT) || { mkdir -p $(dir $(GOLANGCI_LINT)) && GOBIN=$$(mktemp -d) && GOBIN=$$GOBIN $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) && mv $$GOBIN/golangci-lint $(GOLANGCI_LINT); }
	$(GOLANGCI_LINT) run ./...
	cd testdata/e2e && $(GOLANGCI_LINT) run ./...

YQ_VERSION := v4.54.3
TOOLS_DIR ?= $(HOME)/.cache/backflow/tools
YQ := $(TOOLS_DIR)/yq

.PHONY: bench-fleet
FLEET ?= 10,100,1000
bench-fleet: build ## Serve FLEET repositories from a local hub with serve as a process; print each idle tick's requests, wall time, CPU and RSS, and push-to-PR latency
	BACKFLOW_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -v -timeout 120m -run '^TestFleet$$' ./internal/app/ -args -fleet $(FLEET)

.PHONY: bench-yq
bench-yq: build ## Time backflow values set against yq v4 as processes on the same edits, on every corpus file
	@test -x $(YQ) || GOBIN=$(TOOLS_DIR) $(GO) install github.com/mikefarah/yq/v4@$(YQ_VERSION)
	BACKFLOW_BIN=$(CURDIR)/$(BIN) YQ_BIN=$(YQ) $(GO) test -run '^$$' -bench '^BenchmarkProcessVsYQ$$' -benchtime 20x ./cmd/backflow/
