#!/usr/bin/env bash
# Helm for checking charts/ (npm test: helm lint and helm template): built once with `go install`
# at a pinned version into $MAS_HOME/bin, like the stack's Temporal CLI, so a fresh machine needs
# only Go and the module proxy. The first time takes 107 s on 2 idle cores, 203 s beside other
# work (docs/deploy.md); then nothing.
#
#   scripts/helm.sh path          installs if missing, prints the binary's path
#   scripts/helm.sh <helm args>   installs if missing, runs helm
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=go-path.sh
. "$ROOT/scripts/go-path.sh"
MAS_HOME="${MAS_HOME:-$HOME/.cache/managed-agent-service}"
MAS_HELM_VERSION=3.22.0
bin="$MAS_HOME/bin/helm"

if ! { [ -x "$bin" ] && "$bin" version --short 2>/dev/null | grep -q "^v$MAS_HELM_VERSION"; }; then
  command -v go >/dev/null 2>&1 || { echo "[helm] error: Go 1.25 or later is required to build Helm (https://go.dev/doc/install)" >&2; exit 1; }
  mkdir -p "$MAS_HOME/bin" "$MAS_HOME/logs"
  echo "[helm] building Helm v$MAS_HELM_VERSION with go install (once; two to four minutes)" >&2
  log="$MAS_HOME/logs/helm-install.log"
  args=(install -ldflags "-X helm.sh/helm/v3/internal/version.version=v$MAS_HELM_VERSION" "helm.sh/helm/v3/cmd/helm@v$MAS_HELM_VERSION")
  # As for the Temporal CLI (scripts/stack.sh): the checksum database may be unreachable where the
  # module proxy is not.
  if ! GOBIN="$MAS_HOME/bin" CGO_ENABLED=0 go "${args[@]}" >"$log" 2>&1; then
    grep -q 'sum.golang.org' "$log" \
      && GOSUMDB=off GOBIN="$MAS_HOME/bin" CGO_ENABLED=0 go "${args[@]}" >>"$log" 2>&1 \
      || { tail -n 20 "$log" >&2; echo "[helm] error: go install of Helm failed" >&2; exit 1; }
  fi
fi

if [ "${1:-}" = path ]; then echo "$bin"; exit 0; fi
cd "$ROOT"
exec "$bin" "$@"
