#!/usr/bin/env bash
# The schemas the chart's manifests are checked against (test/integration/helm-chart-upgrade.int-spec.ts):
# Kubernetes' own OpenAPI v3 documents (api/openapi-spec/v3 of the k8s.io/kubernetes Go module),
# the Temporal Worker Controller's CRDs (helm/temporal-worker-controller-crds of its Go module) and
# the Gateway API's (config/crd/standard of sigs.k8s.io/gateway-api: the HTTPRoute), all fetched with `go mod download` at pinned versions into the Go module cache
# (about 40 s the first time; then nothing). No API server runs here: `go install` of
# kube-apiserver is refused (k8s.io/kubernetes' go.mod has replace directives), and no registry
# ships its binary (docs/deploy.md, "Checking it").
#
#   scripts/k8s-schemas.sh    prints the OpenAPI v3 directory, then one line per CRD directory
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=go-path.sh
. "$ROOT/scripts/go-path.sh"
K8S_VERSION=v1.34.0
TWC_VERSION=v1.8.1
GATEWAY_API_VERSION=v1.3.0
command -v go >/dev/null 2>&1 || { echo "[k8s-schemas] error: Go is required (https://go.dev/doc/install)" >&2; exit 1; }
dir_of() {
  local out
  # Outside any module, so the project's own go.mod (none) is not consulted; the checksum database
  # may be unreachable where the module proxy is not (as for scripts/helm.sh).
  out=$(cd / && GOFLAGS=-mod=mod go mod download -json "$1" 2>/dev/null) \
    || out=$(cd / && GOFLAGS=-mod=mod GOSUMDB=off go mod download -json "$1")
  printf '%s' "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
echo "$(dir_of "k8s.io/kubernetes@$K8S_VERSION")/api/openapi-spec/v3"
echo "$(dir_of "github.com/temporalio/temporal-worker-controller@$TWC_VERSION")/helm/temporal-worker-controller-crds/templates"
echo "$(dir_of "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")/config/crd/standard"
