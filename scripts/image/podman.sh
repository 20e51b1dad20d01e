#!/usr/bin/env bash
# podman as this project runs it (scripts/image/build.sh, test/e2e/image.e2e-spec.ts):
#   bash scripts/image/podman.sh install        Debian's podman, runc and mmdebstrap, when missing
#   bash scripts/image/podman.sh <podman args>  podman with the settings below
# The settings, each for a refusal met on the project's machines (docs/deploy.md):
# - runc, not Debian's default crun: crun 1.8 refuses a host whose cgroups are in hybrid mode;
# - cgroupfs, not systemd, as the cgroup manager: there is no systemd here;
# - no default ulimits: podman raises RLIMIT_NOFILE/NPROC for each container, which a host may refuse;
# - events in a file, not the journal.
# Rootful: as another user podman needs subordinate ids (rootless), which this does not set up.
set -euo pipefail
MAS_HOME="${MAS_HOME:-$HOME/.cache/managed-agent-service}"
PACKAGES=(podman runc mmdebstrap)

install() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || missing+=(runc)
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  [ ${#missing[@]} = 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[image] installing Debian's ${missing[*]}" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${PACKAGES[@]}" >/dev/null
  else
    echo "[image] ${missing[*]} missing and this is not root with apt-get: install Debian's" \
      "${PACKAGES[*]} (sudo apt-get install ${PACKAGES[*]}); the image cannot be built or run without them" >&2
    return 1
  fi
}

if [ "${1:-}" = install ]; then
  install
  exit
fi
command -v podman >/dev/null || {
  echo "[image] podman is missing: bash scripts/image/podman.sh install (as root), or Debian's ${PACKAGES[*]}" >&2
  exit 127
}
conf="$MAS_HOME/image/containers.conf"
mkdir -p "$(dirname "$conf")"
cat >"$conf.$$" <<'CONF'
# Written by scripts/image/podman.sh (its header says why each setting).
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
mv "$conf.$$" "$conf"
export CONTAINERS_CONF="$conf"
exec podman "$@"
