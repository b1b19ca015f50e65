# Quorate — an etcd operator with its own conformance suite.
#   make demo   local cluster, operator, an etcd cluster under faults, a report
#   make test   unit and integration tests (kube-apiserver and etcd built from source)

VERSION ?= 0.2.0
REGISTRY ?= localhost:5000
# `make image` records the content-tagged references it pushed in bin/.
IMG ?= $(shell cat bin/operator-image 2>/dev/null || echo $(REGISTRY)/quorate/operator:$(VERSION))
ETCD_IMAGE_REPOSITORY ?= $(REGISTRY)/quorate/etcd
WORKLOAD_IMG ?= $(shell cat bin/workload-image 2>/dev/null || echo $(REGISTRY)/quorate/workload:$(VERSION))

# Kubernetes of the local cluster (one of v1.33.13 v1.34.4 v1.35.4 v1.36.3) and of envtest.
K8S_VERSION ?= v1.35.4
K8S_VERSIONS ?= v1.33.13 v1.34.4 v1.35.4 v1.36.3
ETCD_VERSIONS ?= v3.5.35 v3.6.16
ENVTEST_K8S_VERSION ?= v1.35.4
ENVTEST_ETCD_VERSION ?= v3.6.16
CLUSTER ?= quorate
KUBECONFIG_LOCAL ?= $(HOME)/.kube/quorate-$(CLUSTER).yaml
# kubectl targets use the local cluster unless KUBECONFIG says otherwise.
export KUBECONFIG ?= $(KUBECONFIG_LOCAL)
REPORT_DIR ?= $(CURDIR)/reports

CONTROLLER_TOOLS_VERSION ?= v0.20.1
KUSTOMIZE_VERSION ?= v5.7.1
LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
KUBECTL = $(QUORATE_CACHE)/k8s/$(K8S_VERSION)/bin/kubectl
export QUORATE_CACHE ?= $(HOME)/.cache/quorate

GOFLAGS_STATIC = CGO_ENABLED=0 GOOS=linux GOARCH=amd64
LDFLAGS = -s -w -X github.com/quorate-dev/quorate/internal/buildinfo.Version=$(VERSION)

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC manifests.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/...;./controllers/..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object paths="./api/..."

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet, with the e2e build tag too.
	go vet ./...
	go vet -tags e2e ./e2e/...

GOLANGCI_LINT_VERSION ?= v2.15.0
PROMTOOL_VERSION ?= v0.316.0

.PHONY: lint
lint: ## golangci-lint (.golangci.yml), built from the module proxy and cached in QUORATE_CACHE.
	"$$(hack/build-tool.sh github.com/golangci/golangci-lint/v2/cmd/golangci-lint $(GOLANGCI_LINT_VERSION))" run ./...

# The envtests of controllers/etcdcluster each run their own manager in their own namespace and
# spend most of their time waiting on requeues: four at once on two cores.
TEST_PARALLEL ?= 4

.PHONY: test
test: manifests generate fmt vet lint $(KUSTOMIZE) ## Unit and integration tests (envtest with kube-apiserver and etcd built from source; promtool for the alerts; kustomize for the installs' rights), after the linter.
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh $(ENVTEST_K8S_VERSION) $(ENVTEST_ETCD_VERSION))" KUSTOMIZE="$(KUSTOMIZE)" \
	PROMTOOL="$$(hack/build-tool.sh github.com/prometheus/prometheus/cmd/promtool $(PROMTOOL_VERSION) remove_all_sd)" \
	  go test ./... -count=1 -parallel $(TEST_PARALLEL) -coverprofile cover.out

.PHONY: unit
unit: ## Unit tests only (no API server).
	go test $$(go list ./... | grep -v -e /controllers -e /config -e /hack/alerts -e /internal/plugin/apitest) -count=1

##@ Build

.PHONY: build
build: generate fmt vet ## Build the manager, launcher and tools for this machine.
	go build -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/quorate-operator ./cmd
	go build -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/quorate-launcher ./cmd/quorate-launcher
	go build -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/quorate-backup ./cmd/quorate-backup
	go build -o $(LOCALBIN)/quorate-localcluster ./cmd/quorate-localcluster

# GOTAGS=mutants builds the seeded bugs of internal/mutant into the binaries (make mutants
# alone); every other build leaves them out.
GOTAGS ?=
GOTAGS_FLAG = $(if $(GOTAGS),-tags $(GOTAGS))

.PHONY: build-linux
build-linux: ## Build the static linux/amd64 binaries the images hold.
	$(GOFLAGS_STATIC) go build -trimpath $(GOTAGS_FLAG) -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/linux_amd64/quorate-operator ./cmd
	$(GOFLAGS_STATIC) go build -trimpath $(GOTAGS_FLAG) -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/linux_amd64/quorate-launcher ./cmd/quorate-launcher
	$(GOFLAGS_STATIC) go build -trimpath $(GOTAGS_FLAG) -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/linux_amd64/quorate-backup ./cmd/quorate-backup
	$(GOFLAGS_STATIC) go build -trimpath -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/linux_amd64/quorate-workload ./cmd/quorate-workload

.PHONY: plugin
plugin: ## Build the kubectl plugin, bin/kubectl-quorate (in PATH, kubectl runs it as `kubectl quorate`).
	go build -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/kubectl-quorate ./cmd/kubectl-quorate

# RELEASE_REGISTRY (default localhost:5000/quorate-release) receives the images; COSIGN_KEY signs
# them (default: a key generated in $(QUORATE_CACHE)/release for local runs). docs/release.md.
.PHONY: release
release: $(KUSTOMIZE) ## From a clean tree: multi-architecture images (linux/amd64, linux/arm64) with SBOMs and signatures, pushed to RELEASE_REGISTRY; dist/ with install.yaml, quorate-conformance.yaml, the bundle and catalog (images by digest), the kubectl plugin's archives and krew manifest, checksums.
	KUSTOMIZE=$(KUSTOMIZE) ETCD_VERSIONS="$(ETCD_VERSIONS)" hack/release.sh $(VERSION)

.PHONY: run
run: manifests generate ## Run the manager from this machine against the current kubeconfig.
	go run ./cmd --leader-elect=false --metrics-bind-address=0 --launcher-image=$(IMG) --etcd-image-repository=$(ETCD_IMAGE_REPOSITORY)

.PHONY: image
image: build-linux ## Build the operator and workload images and push them to the local registry.
	hack/images.sh operator $(VERSION) > $(LOCALBIN)/operator-image
	hack/images.sh workload $(VERSION) > $(LOCALBIN)/workload-image
	@echo "operator image: $$(cat $(LOCALBIN)/operator-image)"

.PHONY: images
images: image ## Build every image the suite uses (operator, workload, etcd releases).
	for v in $(ETCD_VERSIONS); do hack/images.sh etcd $$v; done

##@ Deployment

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side --force-conflicts -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove the CRDs.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Deploy the operator (IMG) into quorate-system.
	hack/deploy.sh "$(KUSTOMIZE)" "$(KUBECTL)" "$(IMG)" "$(ETCD_IMAGE_REPOSITORY)"

.PHONY: undeploy
undeploy: $(KUSTOMIZE) ## Remove the operator.
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found -f -

##@ OLM

# The bundle's operator version and the one it upgrades from (the upgrade edge of the channel).
BUNDLE_VERSION ?= $(VERSION)
BUNDLE_REPLACES ?= 0.1.0
# Images the published bundle names (make bundle-local points them at the local registry).
BUNDLE_IMG_OPERATOR ?= ghcr.io/quorate-dev/quorate-operator:v$(BUNDLE_VERSION)
BUNDLE_IMG_CONFORMANCE ?= ghcr.io/quorate-dev/quorate-conformance:v$(BUNDLE_VERSION)
BUNDLE_IMG_WORKLOAD ?= ghcr.io/quorate-dev/quorate-workload:v$(BUNDLE_VERSION)
BUNDLE_ETCD_REPOSITORY ?= ghcr.io/quorate-dev/etcd

BUNDLE_DIR ?= bundle
BUNDLE_IMG_REPOSITORY ?= ghcr.io/quorate-dev/quorate-bundle

# The CSV claims disconnected installs: make bundle names every image by digest, the digest of
# the image this tree builds (reproducibly, in the local registry) under its published name.
# BUNDLE_DIGESTS=false names them by tag instead (a quick bundle for development).
BUNDLE_DIGESTS ?= true
LOCAL_ETCD_REPOSITORY ?= $(ETCD_IMAGE_REPOSITORY)

.PHONY: bundle
bundle: manifests $(KUSTOMIZE) ## Generate bundle/ (CSV with images by digest, CRDs, metadata, scorecard config) from config/ and the images it builds; make test validates it.
	flags=$$(VERSION=$(BUNDLE_VERSION) BUNDLE_DIGESTS=$(BUNDLE_DIGESTS) BUNDLE_IMG_OPERATOR=$(BUNDLE_IMG_OPERATOR) BUNDLE_IMG_CONFORMANCE=$(BUNDLE_IMG_CONFORMANCE) \
	  BUNDLE_IMG_WORKLOAD=$(BUNDLE_IMG_WORKLOAD) BUNDLE_ETCD_REPOSITORY=$(BUNDLE_ETCD_REPOSITORY) ETCD_VERSIONS="$(ETCD_VERSIONS)" \
	  LOCAL_ETCD_REPOSITORY=$(LOCAL_ETCD_REPOSITORY) hack/bundle-images.sh) && \
	$(KUSTOMIZE) build config/manifests | go run ./hack/bundle --version $(BUNDLE_VERSION) --replaces "$(BUNDLE_REPLACES)" $$flags --out $(BUNDLE_DIR)

.PHONY: catalog
catalog: bundle ## Generate the file-based catalog (catalog/quorate) with the previous and the current bundle.
	$(MAKE) --no-print-directory bundle BUNDLE_VERSION=$(BUNDLE_REPLACES) BUNDLE_REPLACES= BUNDLE_DIR=$(LOCALBIN)/bundle-$(BUNDLE_REPLACES)
	go run ./hack/catalog --out catalog/quorate/catalog.yaml \
	  --bundle $(BUNDLE_REPLACES)=$(LOCALBIN)/bundle-$(BUNDLE_REPLACES)=$(BUNDLE_IMG_REPOSITORY):v$(BUNDLE_REPLACES) \
	  --bundle $(BUNDLE_VERSION)=$(BUNDLE_DIR)=$(BUNDLE_IMG_REPOSITORY):v$(BUNDLE_VERSION)

.PHONY: olm-build
olm-build: ## Build OLM v0 (olm, catalog, package-server, copy-content, cpb) and opm from the module proxy (cached).
	hack/build-olm.sh

.PHONY: olm
olm: ## Install OLM v0, built from source, on the local cluster (idempotent; no operatorhub.io source).
	KUBECTL=$(KUBECTL) hack/olm.sh

.PHONY: olmv1
olmv1: $(KUSTOMIZE) ## Install OLM v1 (catalogd, operator-controller v1.2.0), built from source, on the local cluster (idempotent).
	KUBECTL=$(KUBECTL) KUSTOMIZE=$(KUSTOMIZE) hack/olmv1.sh

.PHONY: scorecard
scorecard: ## Run operator-sdk scorecard (built from source) on bundle/ against the local cluster: the basic and OLM suites.
	KUBECTL=$(KUBECTL) hack/scorecard.sh

.PHONY: olm-catalog
olm-catalog: ## Build the operator and bundle images of the previous and the current release and two catalog images (opm serve): the previous release alone, and both.
	BUNDLE_REPLACES=$(BUNDLE_REPLACES) BUNDLE_VERSION=$(BUNDLE_VERSION) hack/olm-catalog.sh $(ETCD_IMAGE_REPOSITORY)

##@ Local cluster

CLUSTER_NODES ?= $(if $(filter foreign,$(PROFILE)),3,1)
# The local cluster's admission profile: empty, or openshift-like (OpenShift's pod restrictions:
# PSA restricted everywhere, a UID range per namespace assigned and enforced; docs/local-cluster.md).
PROFILE ?=
.PHONY: cluster-up
cluster-up: ## Start a local cluster of K8S_VERSION built from source, with CLUSTER_NODES nodes and PROFILE (openshift-like, foreign: docs/local-cluster.md; KUBECONFIG in ~/.kube/quorate-$(CLUSTER).yaml).
	go run ./cmd/quorate-localcluster up --name $(CLUSTER) --k8s-version $(K8S_VERSION) --nodes $(CLUSTER_NODES) --profile "$(PROFILE)"

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and remove everything it created.
	go run ./cmd/quorate-localcluster down --name $(CLUSTER)

.PHONY: chaos-mesh
chaos-mesh: ## Build Chaos Mesh from source and install it on the local cluster (idempotent).
	KUBECTL=$(KUBECTL) hack/chaos-mesh.sh /var/lib/quorate/$(CLUSTER)/containerd/containerd.sock

.PHONY: csi
csi: ## Build the CSI-only storage stack (kubernetes-csi sidecars, Quorate's hostpath driver) and install it on the local cluster (idempotent; docs/local-cluster.md; make e2e-csi runs scenarios on it).
	KUBECTL=$(KUBECTL) hack/csi.sh

.PHONY: test-csi-driver
test-csi-driver: ## Lint and test the CSI hostpath driver (its own module, hack/csi/hostpath; csi-sanity runs as root, in a mount namespace of its own).
	cd hack/csi/hostpath && go vet ./... && \
	  "$$(../../build-tool.sh github.com/golangci/golangci-lint/v2/cmd/golangci-lint $(GOLANGCI_LINT_VERSION))" run ./... && \
	  if [ "$$(id -u)" = 0 ]; then unshare -m --propagation private go test ./... -count=1; else go test ./... -count=1; fi

##@ Conformance

CONFORMANCE_FLAGS ?=
# The local cluster's kubelet projects updated Secrets within 15 s (its sync period): a CA
# rotation's phases need not last the 2 minutes a default kubelet calls for.
CERT_PROPAGATION ?= 45s
COMMA := ,
empty :=
space := $(empty) $(empty)
E2E_DURATION ?= 20s
# Scenarios make e2e runs (e2e-framework labels; values of one key are alternatives).
E2E_LABELS ?= suite=core,suite=negative
CHAOS_LABELS ?= suite=chaos,suite=chaos-negative
# The workload's client profiles (--client-profiles; empty: the suite's default, member-aware
# alone): make e2e CLIENT_PROFILES=member-aware,service-only runs both side by side.
CLIENT_PROFILES ?=
# The planned operations make e2e-service-clients measures with both client profiles.
SERVICE_CLIENT_SCENARIOS ?= scale,pod-deletion,etcd-upgrade,node-drain
# make e2e-backup runs these (BACKUP_LABELS=scenario=backup-restore-tls: one scenario).
BACKUP_LABELS ?= suite=backup
# Delay and loss need the kernel's netem and prio qdiscs, which this machine's kernel lacks
# (docs/chaos.md); on nodes that have them: make e2e-chaos CHAOS_SKIP_LABELS=
CHAOS_SKIP_LABELS ?= needs=netem

.PHONY: conformance
conformance: ## Build the shipped suite, bin/quorate-conformance.
	go test -c -tags e2e -ldflags "$(LDFLAGS)" -o $(LOCALBIN)/quorate-conformance ./e2e/conformance

.PHONY: e2e
e2e: conformance image images $(KUSTOMIZE) ## Run the whole suite on a local cluster it starts and removes (K8S_VERSION).
	KUSTOMIZE=$(KUSTOMIZE) $(LOCALBIN)/quorate-conformance --provider=local --cluster-name=quorate-e2e --k8s-version=$(K8S_VERSION) --install-operator \
	  --operator-image=$(or $(E2E_OPERATOR_IMAGE),$$(cat $(LOCALBIN)/operator-image)) --workload-image=$$(cat $(LOCALBIN)/workload-image) \
	  --duration=$(E2E_DURATION) --certificate-propagation=$(CERT_PROPAGATION) --report-dir=$(REPORT_DIR)/$(K8S_VERSION) -test.v -test.timeout=80m --labels=$(E2E_LABELS) --cluster-profile="$(PROFILE)" \
	  $(if $(CLIENT_PROFILES),--client-profiles=$(CLIENT_PROFILES)) $(CONFORMANCE_FLAGS)

# The runs here fail a scenario whose prerequisite is missing (--missing-prerequisites): the
# local cluster provides them all when asked (--install-s3, --install-chaos-mesh, --nodes), so a
# skip here would be a broken environment, not a smaller run. Customers' runs skip it, saying so.
export QUORATE_MISSING_PREREQUISITES ?= fail

# make e2e installs this operator image instead of the one make image built (make mutants
# installs its build with the seeded bugs so).
E2E_OPERATOR_IMAGE ?=

.PHONY: mutants
mutants: ## Run each seeded operator bug (internal/mutant; MUTANTS=a,b narrows) against the scenarios that should kill it on a local cluster, and write docs/reports/mutants.md.
	MUTANTS="$(MUTANTS)" hack/mutants.sh

.PHONY: campaign
campaign: ## Run the randomized campaign on local clusters of K8S_VERSION (RUNS, SEED, FROM, BATCH, CAMPAIGN_OPERATIONS, CAMPAIGN_FAULTS) and write docs/reports/campaign.md over every run under CAMPAIGN_DIR.
	RUNS="$(RUNS)" SEED="$(SEED)" FROM="$(FROM)" BATCH="$(BATCH)" CAMPAIGN_OPERATIONS="$(CAMPAIGN_OPERATIONS)" CAMPAIGN_FAULTS="$(CAMPAIGN_FAULTS)" CHAOS_SKIP_LABELS="$(CHAOS_SKIP_LABELS)" \
	  FAILPOINT_ETCD=$(FAILPOINT_ETCD) FAILPOINT_UPGRADE_FROM=$(FAILPOINT_UPGRADE_FROM) K8S_VERSION=$(K8S_VERSION) hack/campaign.sh

# The etcd release the failpoint scenarios run, built with its gofail failpoints (the suite's
# --etcd-version), and the one the failpoint scenarios of an upgrade start from (the suite's
# --etcd-upgrade-from).
FAILPOINT_ETCD ?= v3.6.16
FAILPOINT_UPGRADE_FROM ?= v3.5.35

.PHONY: e2e-failpoints
e2e-failpoints: ## Run the failpoint scenarios (etcd built with gofail panics or stalls inside itself: before saving raft entries, before and after a commit, saving a snapshot, defragmenting, compacting, while the operator scales, rolls, upgrades 3.5 to 3.6, defragments) on a local cluster.
	hack/images.sh etcd-failpoints $(FAILPOINT_ETCD)
	hack/images.sh etcd-failpoints $(FAILPOINT_UPGRADE_FROM)
	$(MAKE) --no-print-directory e2e E2E_LABELS=$(or $(FAILPOINT_LABELS),suite=failpoints) REPORT_DIR=$(REPORT_DIR)/failpoints \
	  CONFORMANCE_FLAGS="--etcd-version=$(FAILPOINT_ETCD:v%=%) --failpoint-etcd-image=localhost:5000/quorate/etcd:$(FAILPOINT_ETCD)-failpoints \
	  --etcd-upgrade-from=$(FAILPOINT_UPGRADE_FROM:v%=%) --failpoint-upgrade-from-image=localhost:5000/quorate/etcd:$(FAILPOINT_UPGRADE_FROM)-failpoints $(CONFORMANCE_FLAGS)"

.PHONY: e2e-safety
e2e-safety: ## Run the safety scenarios (volumes deleted, data wiped, power loss, bad image, NOSPACE, full disks, retention, forced recovery and its fencing) on a local cluster.
	$(MAKE) --no-print-directory e2e E2E_LABELS=suite=safety REPORT_DIR=$(REPORT_DIR)/safety

.PHONY: e2e-hibernate
e2e-hibernate: ## Run the hibernation scenario (spec.hibernate under load: every pod stopped, then woken from the volumes) on a local cluster.
	$(MAKE) --no-print-directory e2e E2E_LABELS=scenario=hibernate REPORT_DIR=$(REPORT_DIR)/hibernate
# An etcd release before 3.5.19, whose learners pass readiness (learner-budget runs at it;
# 3.5.17: the checksum database this machine reaches has no etcdutl v3.5.18).
LEARNER_READY_ETCD ?= v3.5.17
.PHONY: e2e-learner-budget
e2e-learner-budget: ## Run learner-budget (voters evicted while a Ready learner stands and no operator acts: the PodDisruptionBudget alone keeps quorum) on a local cluster, at etcd LEARNER_READY_ETCD.
	hack/images.sh etcd $(LEARNER_READY_ETCD) >/dev/null
	$(MAKE) --no-print-directory e2e E2E_LABELS=scenario=learner-budget REPORT_DIR=$(REPORT_DIR)/learner-budget \
	  CONFORMANCE_FLAGS="--etcd-learner-ready-version=$(LEARNER_READY_ETCD:v%=%) $(CONFORMANCE_FLAGS)"
.PHONY: e2e-fence
e2e-fence: ## Run the fence scenario (a follower fenced and unfenced under load, issue 46) on a local cluster.
	$(MAKE) --no-print-directory e2e E2E_LABELS=scenario=fence REPORT_DIR=$(REPORT_DIR)/fence

.PHONY: e2e-migration
e2e-migration: ## Run the migration scenarios (storage class change, install-scope change, an external etcd cluster moved in) on a local cluster.
	$(MAKE) --no-print-directory e2e E2E_LABELS=suite=migration REPORT_DIR=$(REPORT_DIR)/migration

.PHONY: e2e-csi conformance-foreign
conformance-foreign: $(KUSTOMIZE) ## On the foreign profile's cluster (make cluster-up PROFILE=foreign): install Quorate and run the conformance Job as a customer does (hack/conformance-foreign.sh); every scenario PASS or SKIPPED.
	KUSTOMIZE=$(KUSTOMIZE) REPORT_DIR=$(REPORT_DIR)/foreign hack/conformance-foreign.sh

e2e-csi: ## Run storage-migration onto CSI storage and volume-expansion on it (the CSI-only stack, StorageClass quorate-csi, installed by --install-csi) on a local cluster.
	$(MAKE) --no-print-directory e2e E2E_LABELS=scenario=storage-migration,scenario=volume-expansion REPORT_DIR=$(REPORT_DIR)/csi \
	  CONFORMANCE_FLAGS="--install-csi --storage-classes=local-path,quorate-csi --expansion-storage-class=quorate-csi $(CONFORMANCE_FLAGS)"

.PHONY: e2e-backup
e2e-backup: ## Run the backup scenarios (backup to a real S3 store, over HTTP and over TLS with a private CA, to emulated Google Cloud Storage and Azure Blob, restore, schedules with retention and drills, bad input) on a local cluster.
	$(MAKE) --no-print-directory e2e E2E_LABELS=$(BACKUP_LABELS) REPORT_DIR=$(REPORT_DIR)/backup CONFORMANCE_FLAGS="--install-s3 --install-stores $(CONFORMANCE_FLAGS)"

.PHONY: stores
stores: ## Install emulated cloud object stores (fake-gcs-server from the module proxy, Azurite from npm) on the local cluster (idempotent).
	KUBECTL=$(KUBECTL) hack/stores.sh

.PHONY: s3
s3: ## Install the S3 object store (versitygw, built from source) on the local cluster (idempotent).
	KUBECTL=$(KUBECTL) hack/s3.sh

NODES ?= 4
.PHONY: e2e-nodes
e2e-nodes: ## Run the node scenarios (the leader's node drained, powered off, cut off) on a local cluster of NODES nodes (node 1 and three for the members).
	$(MAKE) --no-print-directory e2e E2E_LABELS=suite=nodes REPORT_DIR=$(REPORT_DIR)/nodes CONFORMANCE_FLAGS="--nodes=$(NODES) $(CONFORMANCE_FLAGS)"

.PHONY: e2e-service-clients
e2e-service-clients: ## Measure Service-only clients beside member-aware ones: the planned operations (SERVICE_CLIENT_SCENARIOS: scale, pod-deletion, etcd-upgrade, node-drain) with both client profiles on a local cluster of NODES nodes.
	$(MAKE) --no-print-directory e2e E2E_LABELS=$(subst $(COMMA),$(COMMA)scenario=,scenario=$(SERVICE_CLIENT_SCENARIOS)) REPORT_DIR=$(REPORT_DIR)/service-clients \
	  CLIENT_PROFILES=$(or $(CLIENT_PROFILES),member-aware$(COMMA)service-only) CONFORMANCE_FLAGS="--nodes=$(NODES) $(CONFORMANCE_FLAGS)"

.PHONY: e2e-chaos
e2e-chaos: conformance image images $(KUSTOMIZE) ## Run steady state and scale 3->5->3 under every Chaos Mesh fault (FAULTS narrows: FAULTS=pod-kill-leader,delay).
	KUSTOMIZE=$(KUSTOMIZE) $(LOCALBIN)/quorate-conformance --provider=local --cluster-name=quorate-e2e --k8s-version=$(K8S_VERSION) --install-operator --install-chaos-mesh \
	  --operator-image=$$(cat $(LOCALBIN)/operator-image) --workload-image=$$(cat $(LOCALBIN)/workload-image) \
	  --duration=$(E2E_DURATION) --report-dir=$(REPORT_DIR)/chaos-$(K8S_VERSION) -test.v -test.timeout=150m \
	  --labels=$(if $(FAULTS),$(shell echo "$(FAULTS)" | sed 's/\([^,]*\)/fault=\1/g'),$(CHAOS_LABELS)) $(if $(CHAOS_SKIP_LABELS),--skip-labels=$(CHAOS_SKIP_LABELS)) $(CONFORMANCE_FLAGS)

.PHONY: e2e-olm
e2e-olm: conformance image images $(KUSTOMIZE) ## Install Quorate through OLM v0 (AllNamespaces; OwnNamespace with the N-1 -> N upgrade) and OLM v1 (N-1 -> N) on a local cluster under the workload.
	KUSTOMIZE=$(KUSTOMIZE) $(LOCALBIN)/quorate-conformance --provider=local --cluster-name=quorate-e2e --k8s-version=$(K8S_VERSION) --install-olm --olmv1 \
	  --olm-versions=$(BUNDLE_REPLACES),$(BUNDLE_VERSION) --workload-image=$$(cat $(LOCALBIN)/workload-image) \
	  --duration=$(E2E_DURATION) --report-dir=$(REPORT_DIR)/olm-$(K8S_VERSION) -test.v -test.timeout=60m --labels=suite=olm $(CONFORMANCE_FLAGS)

.PHONY: e2e-smoke
e2e-smoke: ## Smoke test: local cluster, operator, a 3-member cluster written and read through its Service, teardown.
	$(MAKE) e2e CONFORMANCE_FLAGS="--labels=scenario=steady $(CONFORMANCE_FLAGS)" E2E_DURATION=10s

# etcdctl for `kubectl quorate etcdctl` in e2e-plugin (hack/build-etcd.sh builds it).
ETCDCTL ?= $(QUORATE_CACHE)/etcd/$(ENVTEST_ETCD_VERSION)/bin/etcdctl
.PHONY: e2e-plugin
e2e-plugin: plugin image images $(KUSTOMIZE) ## Run every kubectl-quorate command against a cluster on a local cluster it starts and removes (e2e/plugin).
	go test -c -tags e2e -o $(LOCALBIN)/quorate-e2e-plugin ./e2e/plugin
	KUSTOMIZE=$(KUSTOMIZE) PLUGIN=$(LOCALBIN)/kubectl-quorate ETCDCTL=$(ETCDCTL) $(LOCALBIN)/quorate-e2e-plugin --provider=local --cluster-name=quorate-e2e --k8s-version=$(K8S_VERSION) --install-operator --install-s3 \
	  --operator-image=$$(cat $(LOCALBIN)/operator-image) --workload-image=$$(cat $(LOCALBIN)/workload-image) \
	  --duration=$(E2E_DURATION) --report-dir=$(REPORT_DIR)/plugin -test.v -test.timeout=40m $(CONFORMANCE_FLAGS)

.PHONY: e2e-matrix
e2e-matrix: conformance image images ## Run the suite on every Kubernetes version of the matrix and combine the reports.
	for v in $(K8S_VERSIONS); do \
	  $(MAKE) --no-print-directory e2e K8S_VERSION=$$v REPORT_DIR=$(REPORT_DIR)/matrix || echo "suite failed on $$v"; \
	done
	go run ./cmd/quorate-report combine $(REPORT_DIR)/matrix

BENCH_RUNS ?= 20

.PHONY: bench
bench: conformance image images $(KUSTOMIZE) ## Benchmarks (not a CI gate): a rolling etcd upgrade and the leader's pod deleted, BENCH_RUNS times each under the open-loop load, and the rate the machine sustains; bench.md has the distributions.
	KUSTOMIZE=$(KUSTOMIZE) $(LOCALBIN)/quorate-conformance --provider=local --cluster-name=quorate-e2e --k8s-version=$(K8S_VERSION) --install-operator \
	  --operator-image=$$(cat $(LOCALBIN)/operator-image) --workload-image=$$(cat $(LOCALBIN)/workload-image) \
	  --duration=5s --bench-runs=$(BENCH_RUNS) --report-dir=$(REPORT_DIR)/bench/$(K8S_VERSION) -test.v -test.timeout=180m --labels=suite=bench,suite=bench-rate \
	  $(if $(CLIENT_PROFILES),--client-profiles=$(CLIENT_PROFILES)) $(CONFORMANCE_FLAGS) || true
	go run ./cmd/quorate-report bench $(REPORT_DIR)/bench/$(K8S_VERSION)

# The side-by-side benchmark (not a CI gate): Quorate and the two other maintained etcd
# operators, built from their source in PEERS_DIR (hack/peers.sh), on one local cluster with
# one workload; reports/peers/<version>/peers.md and peers.html have the tables.
PEERS ?= etcd-io,cozystack
PEERS_DIR ?= $(abspath ../shared/peers)
ETCD_UPGRADE_PATCH_FROM ?= 3.6.15
.PHONY: bench-peers
bench-peers: conformance image images $(KUSTOMIZE) ## Side by side (not a CI gate): Quorate, the etcd-io and the cozystack etcd operators through the same operations, workload and checkers.
	hack/images.sh etcd v$(ETCD_UPGRADE_PATCH_FROM) >/dev/null
	PEERS_DIR=$(PEERS_DIR) KUSTOMIZE=$(KUSTOMIZE) $(LOCALBIN)/quorate-conformance --provider=local --cluster-name=quorate-e2e --k8s-version=$(K8S_VERSION) --install-operator \
	  --operator-image=$$(cat $(LOCALBIN)/operator-image) --workload-image=$$(cat $(LOCALBIN)/workload-image) \
	  --duration=$(E2E_DURATION) --peers=$(PEERS) --peers-etcd-repository=registry.quorate.local/quorate/etcd --etcd-upgrade-patch-from=$(ETCD_UPGRADE_PATCH_FROM) --report-dir=$(REPORT_DIR)/peers/$(K8S_VERSION) \
	  -test.v -test.timeout=240m --labels=suite=peers $(CONFORMANCE_FLAGS) || true
	go run ./cmd/quorate-report peers $(REPORT_DIR)/peers/$(K8S_VERSION)

# The operator itself at SCALE_CLUSTERS EtcdClusters (not a CI gate): a real API server
# (envtest's) and the real operator binary, built with the tag scalesim so that etcd's answers
# come from memory; hack/scale plays the kubelet. SCALE_FLAGS passes hack/scale's flags.
SCALE_CLUSTERS ?= 5000
SCALE_FLAGS ?=
.PHONY: bench-scale
bench-scale: ## The operator at SCALE_CLUSTERS EtcdClusters (simulated kubelet and etcd, real API server and operator): memory, CPU, cold start, API requests, steady-state writes; reports/scale/scale.md.
	go build -tags scalesim -o $(LOCALBIN)/quorate-operator-scalesim ./cmd
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh $(ENVTEST_K8S_VERSION) $(ENVTEST_ETCD_VERSION))" \
	  go run ./hack/scale -clusters $(SCALE_CLUSTERS) -operator $(LOCALBIN)/quorate-operator-scalesim -out $(REPORT_DIR)/scale $(SCALE_FLAGS)

.PHONY: demo
demo: conformance image images ## Local cluster, operator, etcd clusters under faults, and a report in reports/demo.
	go run ./cmd/quorate-localcluster up --name $(CLUSTER) --k8s-version $(K8S_VERSION)
	$(MAKE) --no-print-directory deploy chaos-mesh
	$(LOCALBIN)/quorate-conformance --provider=existing --kubeconfig=$(KUBECONFIG_LOCAL) --workload-image=$$(cat $(LOCALBIN)/workload-image) \
	  --duration=15s --report-dir=$(REPORT_DIR)/demo --feature='^(pod-deletion|pvc-loss|quorum-loss|steady-partition-leader|steady-partition-majority)$$' -test.v -test.timeout=60m
	@echo; cat $(REPORT_DIR)/demo/summary.md | head -12
	@echo; echo "Open $(REPORT_DIR)/demo/index.html in a browser. The cluster keeps running (KUBECONFIG=$(KUBECONFIG_LOCAL)); make cluster-down removes it."

##@ Tools

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

# Tools are built once per machine in ~/.cache/quorate (hack/build-tool.sh), which a fresh clone
# (CI) finds; bin/ links to them.
$(CONTROLLER_GEN): | $(LOCALBIN)
	ln -sf "$$(hack/build-tool.sh sigs.k8s.io/controller-tools/cmd/controller-gen $(CONTROLLER_TOOLS_VERSION))" $(CONTROLLER_GEN)

$(KUSTOMIZE): | $(LOCALBIN)
	ln -sf "$$(hack/build-tool.sh sigs.k8s.io/kustomize/kustomize/v5 $(KUSTOMIZE_VERSION))" $(KUSTOMIZE)
