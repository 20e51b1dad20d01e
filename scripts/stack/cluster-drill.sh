#!/usr/bin/env bash
# The cluster drills (scripts/drill/drill.mjs with DRILL_CLUSTER=1) against the cluster profile
# (`npm run stack -- up --profile cluster` first): the drill's apps, on their own task queue,
# consumer groups and database (mas_drill on the cluster's PostgreSQL), reach the engines over TLS
# under the drill's keyed load while a fault is injected: kill -9 of the active KRaft controller
# (which also leads a partition of each topic), of the Temporal history process, of the matching
# process; each is started again after the outage. Then kill -9 of the drill's api, worker and
# relay (each started again), and two replicas of each app: one api killed -9 behind HAProxy, then
# one of each app killed and left dead.
# The drill's invariants after each: 0 lost,
# 0 charged twice, every charge's usage event once, the projection exact. Never touches the
# default stack.
#
#   scripts/stack/cluster-drill.sh [--quick] [--only <regexp of phase names>]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=../node-path.sh
. scripts/node-path.sh

bash scripts/stack/cluster.sh status | grep -q '^api: ready' || { echo "[cluster-drill] the cluster profile is not up: npm run stack -- up --profile cluster" >&2; exit 2; }
npm run --silent build
bash scripts/stack/cluster.sh psql -d postgres -Atc "select 1 from pg_database where datname = 'mas_drill'" | grep -q 1 \
  || bash scripts/stack/cluster.sh psql -q -d postgres -c "create database mas_drill"
eval "$(bash scripts/stack/cluster.sh env mas_drill)"
node dist/apps/cli/src/main.js migrate >&2

DRILL_TS="$(date -u +%Y%m%dT%H%M%SZ)"
DRILL_RUN_DIR="${TMPDIR:-/tmp}/mas-cluster-drill-$DRILL_TS"
mkdir -p "$DRILL_RUN_DIR"
: >"$DRILL_RUN_DIR/pids"
export DRILL_TS DRILL_RUN_DIR DRILL_CLUSTER=1
echo "[cluster-drill] logs in $DRILL_RUN_DIR" >&2

harness=
# Stops the harness (which stops its apps), then any app it recorded that is still alive (only pids
# whose command line is one of ours), and starts whatever of the cluster a cut-short fault left down.
cleanup() {
  local code=$?
  trap - EXIT INT TERM
  if [ -n "$harness" ] && kill -0 "$harness" 2>/dev/null; then
    kill -TERM "$harness" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$harness" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$harness" 2>/dev/null || true
  fi
  while read -r pid; do
    [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qE 'dist/apps/(api|worker|relay|projector)/src/main\.js' \
      && kill -KILL "$pid" 2>/dev/null || true
  done <"$DRILL_RUN_DIR/pids"
  bash scripts/stack/cluster.sh start >/dev/null 2>&1 || true
  exit "$code"
}
trap cleanup EXIT INT TERM

# shellcheck source=../drill/harness.sh
. scripts/drill/harness.sh
run_harness "$@"
