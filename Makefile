# bind-operator — see README.md. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

GO ?= go
CONTROLLER_GEN := $(GO) tool -modfile=hack/tools/go.mod controller-gen
# golangci-lint as pinned in hack/tools/go.mod, with kube-api-linter built in.
GOLANGCI_LINT := $(GO) tool -modfile=hack/tools/go.mod golangci-lint-kube-api-linter
K8S_BIN := $(CURDIR)/bin/k8s
# RBAC comes from the markers of whichever of these packages exist.
RBAC_PATHS := $(foreach d,$(wildcard cmd controllers certs webhooks),paths=./$(d)/...)
TOOLS_BIN := $(CURDIR)/bin/tools
export KUBEBUILDER_ASSETS ?= $(K8S_BIN)

# One version everywhere: the binary, both images, the install files and
# the chart. An untagged checkout builds v0.0.0-dev.g<commit>
# (hack/version.sh); a release is `make release VERSION=vX.Y.Z`.
VERSION ?= $(shell hack/version.sh)
REGISTRY ?= git.unkin.net/unkin
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
IMG ?= $(REGISTRY)/bind-operator:$(VERSION)
BIND_IMG ?= $(REGISTRY)/bind-operator-bind9:$(VERSION)
export VERSION REGISTRY COMMIT
VERSION_PKG := git.unkin.net/unkin/bind-operator/internal/version
LDFLAGS := -s -w -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT) -X $(VERSION_PKG).repository=$(REGISTRY)
# kubectl renders the install files (its kustomize) and deploys them: the
# one make envtest builds when it is there (evaluated when used, so after
# the prerequisites), else the host's.
KUBECTL ?= $(if $(wildcard $(K8S_BIN)/kubectl),$(K8S_BIN)/kubectl,$(or $(shell command -v kubectl 2>/dev/null),$(K8S_BIN)/kubectl))
export KUBECTL

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: ## Generate deepcopy code from the API types.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: ## Generate CRDs, RBAC and webhook configurations from markers, and the API reference from the CRDs.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role $(RBAC_PATHS) output:rbac:artifacts:config=config/rbac
	@if ls webhooks/*.go >/dev/null 2>&1; then $(CONTROLLER_GEN) webhook paths=./webhooks/... output:webhook:artifacts:config=config/webhook; fi
	hack/sync-chart.sh
	$(GO) run ./hack/apidocs -crds config/crd/bases -out docs/reference/api.md

.PHONY: verify-generated
verify-generated: generate manifests ## Fail when generated files differ from what is committed.
	@if [ -n "$$(git status --porcelain -- api config charts docs/reference)" ]; then \
	  echo "generated files are stale; run 'make generate manifests' and commit:"; \
	  git status --porcelain -- api config charts docs/reference; git --no-pager diff --stat -- api config charts docs/reference; exit 1; fi

.PHONY: fmt
fmt: ## Format the code.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Lint with go vet.
	$(GO) vet ./...

.PHONY: lint
# golangci-lint with the small linter set of .golangci.yml (each one says
# why), and kube-api-linter on api/ only; the first run builds the linter
# (about 2.5 minutes on two cores), later runs reuse it and its cache.
lint: vet ## Lint (go vet, gofmt, golangci-lint and kube-api-linter).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi
	$(GOLANGCI_LINT) run ./...

##@ Build

.PHONY: build
build: ## Build the single binary (manager, agent, version) into bin/, stamped with VERSION.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/bind-operator ./cmd

.PHONY: tools
tools: ## Build the registry, Helm, promtool and Prometheus from the Go module proxy into bin/tools (once).
	hack/build-tools.sh $(TOOLS_BIN)

.PHONY: images
images: tools ## Build the operator and BIND images of VERSION with buildah and push them to the local registry (PUSH_REGISTRY=host:port: another one).
	hack/build-images.sh $(CURDIR)/bin/images

.PHONY: release
release: images ## Build release VERSION=vX.Y.Z: both images, dist/crds.yaml, install.yaml, install-cert-manager.yaml, the Helm chart and the binaries.
	hack/release.sh manifests $(VERSION) $(CURDIR)/dist
	hack/release.sh chart $(VERSION) $(CURDIR)/dist
	hack/release.sh binaries $(VERSION) $(CURDIR)/dist

.PHONY: deploy
# TLS=certManager installs the cert-manager variant (cert-manager must be there).
TLS ?= selfManaged
deploy: ## Install the operator image IMG (and BIND_IMG) into the current kubeconfig's cluster: CRDs, then the operator.
	IMG=$(IMG) BIND_IMG=$(BIND_IMG) hack/release.sh manifests $(VERSION) $(CURDIR)/bin/deploy
	$(KUBECTL) apply --server-side -f bin/deploy/crds.yaml -f bin/deploy/$(if $(filter certManager,$(TLS)),install-cert-manager.yaml,install.yaml)

.PHONY: undeploy
undeploy: ## Remove what make deploy installed except the CRDs (the zones and records stay).
	$(KUBECTL) delete --ignore-not-found -f bin/deploy/$(if $(filter certManager,$(TLS)),install-cert-manager.yaml,install.yaml)

##@ Test

.PHONY: deps
deps: ## Install the Debian packages the tests need (BIND 9.18 tools).
	hack/install-deps.sh

.PHONY: envtest
envtest: ## Build etcd and the Kubernetes binaries (API server to kubelet) from the Go module proxy into bin/k8s (once).
	hack/build-k8s-binaries.sh $(K8S_BIN)

.PHONY: test
# The local-cluster packages each run a machine-wide cluster on a real node
# (one at a time, behind a lock); they run after the rest, one package after
# the other.
LOCALCLUSTER_PKGS := ./test/localcluster/... ./test/e2e/...

# The Kubernetes binaries and the tools then images are built side by side:
# one waits on the network (debootstrap, apt, modules) while the other
# compiles. The tools include promtool, which test/monitoring runs over the
# shipped alerts (about 3.5 CPU-minutes cold, 5.5 minutes on two busy cores),
# and the Prometheus server test/e2e scrapes the node with (a minute more:
# it shares promtool's packages).
.PHONY: prerequisites
prerequisites: deps
	$(MAKE) --no-print-directory -j2 envtest images

test: prerequisites verify-generated lint ## Install what is missing, then run every test.
	$(GO) test -count=1 $$($(GO) list ./... | grep -v -e /test/localcluster -e /test/e2e)
	$(GO) test -count=1 -race ./render ./agent/server ./dnsclient
	$(GO) test -count=1 -p 1 -timeout 40m $(LOCALCLUSTER_PKGS)

.PHONY: bench
# Each benchmark prints its table beside a baseline measured in the same run;
# -p 1 keeps them from sharing the two cores. The last ones run in the local
# cluster, tests that print their tables. The in-cluster benchmark (issue 6 i;
# issue 15 items 1, 3 and 4) gets a cluster of its own: its latencies are
# those of a steady API server, not of one that has just taken the 30,000
# DNSRecord writes of the spread bench and keeps them in its watch cache
# (three to four times the heap; edit p99 a median of 56.6 ms over eight
# such runs against 43.5 ms over six alone; docs/behaviours.md, "An API
# server that has just taken a burst"). It measures the edits back to back
# and again paced, one every 100 ms (docs/behaviours.md, "Fewer log lines,
# and edits at a user's pace"). The second cluster first fills one
# namespace to the default quotas and reports the manager's memory (issue
# 44 item 4), then runs the same 10,000 DNSRecords spread over 100 zones (issue 15 items 1 and 4), the
# chaos runs with 10,000 DNSRecords (issue 15 item 7) and 10,000 BindZones in
# one catalog (issue 15 item 4; skipped by make test: about 22 minutes, as
# zones reach Ready at about 10 per second at that size; docs/behaviours.md,
# "Scale").
bench: deps envtest images ## Run the benchmarks and print their tables.
	$(GO) test -run '^$$' -bench . -benchmem -p 1 $$($(GO) list ./... | grep -v -e /test/localcluster -e /test/e2e)
	$(GO) test -count=1 -timeout 60m -run '^TestInClusterBench$$' -v ./test/e2e/ -args -bench-paced-every=100ms
	$(GO) test -count=1 -timeout 120m -run '^(TestInClusterQuotaBench|TestInClusterSpreadBench|TestChaos|TestInClusterZonesBench)$$' -v ./test/e2e/ -args -bench-quota -chaos-created=10000 -bench-spread-zones=100 -bench-zones=10000

##@ Demo

.PHONY: demo
demo: ## A local cluster on a real node, the checkout installed as a release with helm, the samples applied, dig answers (root).
	hack/demo.sh
