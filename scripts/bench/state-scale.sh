#!/usr/bin/env bash
# npm run bench:state [-- --sizes 20000,200000] [-- --no-build]
#
# The state-scale benchmark (docs/performance.md, "State that scales"): for each size, fills a
# database of its own (mas_bench_state, dropped and created again; never mas or a test database) to
# that many agent requests in production shape with SQL (generate_series), then times the hot
# statements and jobs through the service's own code from dist/: GET /v1/sessions of the large
# project, GET /v1/agent/{id}, the reconciler's open-reservation pass, the retention pass (a
# backlog, then steady) and a projection rebuild with the longest wait of a concurrent writer.
# One table on stdout with the growth ratio from the smallest size to the largest, and
# bench/results/state-<timestamp>.json. Never fails on timing; not part of npm test.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

build=1
args=()
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    -h | --help)
      sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) args+=("$arg") ;;
  esac
done

if [ "$build" = 1 ]; then
  npm run --silent build || { echo "[bench:state] the build failed: nothing was measured" >&2; exit 1; }
fi
unset DATABASE_URL
# shellcheck source=../stack/env.sh
. scripts/stack/env.sh
exec node scripts/bench/state-scale.mjs "${args[@]}"
