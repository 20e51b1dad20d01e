#!/usr/bin/env bash
# The service's image, built from this repository by its Dockerfile with Debian's podman
# (docs/deploy.md, "Building the image"):
#   bash scripts/image/build.sh     prints the image's id on its last line (sha256:...: what a
#                                   test runs, even if another build takes the tag meanwhile)
# Environment:
#   MAS_IMAGE    the name to tag (default localhost/managed-agent-service:latest)
#   BASE_IMAGE   the Dockerfile's base; unset, one made here from Debian's packages (below), since
#                this project's machines reach no image registry. An operator who can pull sets
#                BASE_IMAGE=node:24-bookworm-slim (the Dockerfile's own default).
# The build id (the Dockerfile's BUILD_ID) is the package version + the commit, as `npm run build`
# writes it from git; with changes to the build's inputs none is passed, and the image's is the
# version + its workflow bundle's hash (scripts/bundle-workflows.mjs), never a commit it is not.
#
# The local base: Debian bookworm (mmdebstrap, minbase) laid out as node:24-bookworm-slim is, so
# that the same Dockerfile builds on either: Node.js 24 at /usr/local/bin/node, npm beside it, a
# user `node` (1000). Debian bookworm's own nodejs is 18; Node 24 is the one the project already
# runs on, the npm registry's `node` package in node_modules (package.json's devDependencies), so
# the image runs the very Node.js the tests run. npm is the one running this script. The base is
# kept as a tarball under $MAS_HOME/image and in podman's storage, keyed on those versions and its
# recipe (local_base), so later builds reuse it.
set -euo pipefail
shopt -s inherit_errexit
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=../node-path.sh
. scripts/node-path.sh
MAS_HOME="${MAS_HOME:-$HOME/.cache/managed-agent-service}"
IMAGE="${MAS_IMAGE:-localhost/managed-agent-service:latest}"
PODMAN=(bash "$ROOT/scripts/image/podman.sh")
log() { echo "[image] $*" >&2; }
seconds() { echo $(($(date +%s) - $1)); }

"${PODMAN[@]}" install

# The recipe of the local base: Debian bookworm's minbase, without documentation, with Node.js ($1,
# a binary) and npm ($2, its directory) where node:24-bookworm-slim has them, and its user node
# (1000); as a tarball ($3).
make_base() {
  mmdebstrap --quiet --mode=root --variant=minbase \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook='mkdir -p "$1/usr/local/bin" "$1/usr/local/lib/node_modules"' \
    --customize-hook="cp '$1' \"\$1/usr/local/bin/node\"" \
    --customize-hook="cp -a '$2' \"\$1/usr/local/lib/node_modules/npm\"" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"' \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
    --customize-hook='chroot "$1" groupadd --gid 1000 node' \
    --customize-hook='chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    --format=tar bookworm "$3" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" >&2
}

local_base() {
  local node npm_dir node_version npm_version key tag tarball started
  node="$(readlink -f node_modules/node/bin/node)"
  [ -x "$node" ] || { log "node_modules/node/bin/node is missing: npm install first"; return 1; }
  npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
  [ -f "$npm_dir/package.json" ] || { log "no npm next to $(command -v npm)"; return 1; }
  node_version="$("$node" --version)"
  npm_version="$(npm --version)"
  # Remade when Node.js, npm or the recipe changes.
  key="$(declare -f make_base | sha256sum | cut -c1-8)"
  tag="localhost/mas-node-base:${node_version#v}-npm${npm_version}-$key"
  if "${PODMAN[@]}" image exists "$tag"; then
    echo "$tag"
    return
  fi
  tarball="$MAS_HOME/image/base-${node_version#v}-npm${npm_version}-$key.tar"
  if [ ! -f "$tarball" ]; then
    started=$(date +%s)
    log "making the base from Debian's packages (mmdebstrap bookworm) with Node.js $node_version, npm $npm_version"
    mkdir -p "$(dirname "$tarball")"
    make_base "$node" "$npm_dir" "$tarball.$$"
    mv "$tarball.$$" "$tarball"
    # An older base is not used again: its tarball goes (podman keeps its image until pruned).
    find "$MAS_HOME/image" -maxdepth 1 -name 'base-*.tar' ! -path "$tarball" -delete
    log "base made in $(seconds "$started") s"
  fi
  started=$(date +%s)
  "${PODMAN[@]}" import --quiet --change 'CMD ["node"]' "$tarball" "$tag" >/dev/null
  log "base imported in $(seconds "$started") s: $tag"
  echo "$tag"
}

started=$(date +%s)
base="${BASE_IMAGE:-}"
[ -n "$base" ] || base="$(local_base)"

version="$(node -p 'require("./package.json").version')"
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || true)"
build_args=(--build-arg "BASE_IMAGE=$base")
# The build's inputs (what .dockerignore lets through, and the Dockerfile), new files included:
# the commit's id only when they are the commit's.
inputs=(Dockerfile .dockerignore package.json package-lock.json tsconfig.json tsconfig.build.json
  scripts/bundle-workflows.mjs apps libs workflows)
if [ -n "$commit" ] && [ -z "$(git status --porcelain -- "${inputs[@]}")" ]; then
  build_args+=(--build-arg "BUILD_ID=$version+$commit")
  log "building $IMAGE on $base, build id $version+$commit"
else
  log "building $IMAGE on $base: the build's inputs differ from the commit, the build id is the version + the workflow bundle's hash"
fi
# The CA bundle this machine's npm trusts (a TLS-inspecting proxy's), for the build's npm ci: npm's
# cafile, or Node's NODE_EXTRA_CA_CERTS.
cafile="${NPM_CONFIG_CAFILE:-${npm_config_cafile:-$(npm config get cafile 2>/dev/null || true)}}"
case "$cafile" in null | undefined) cafile="" ;; esac
cafile="${cafile:-${NODE_EXTRA_CA_CERTS:-}}"
if [ -n "$cafile" ] && [ -s "$cafile" ]; then
  build_args+=(--secret "id=npm_ca,src=$cafile")
fi
iidfile="$(mktemp)"
trap 'rm -f "$iidfile"' EXIT
build_started=$(date +%s)
# Host network: the build's npm ci reaches the registry as this machine does (no bridge here).
"${PODMAN[@]}" build --network host --layers --pull=missing "${build_args[@]}" \
  --label "org.opencontainers.image.revision=${commit:-unknown}" \
  --iidfile "$iidfile" -t "$IMAGE" -f Dockerfile . >&2
log "image built in $(seconds "$build_started") s ($(seconds "$started") s in all): $IMAGE"
cat "$iidfile"
echo
