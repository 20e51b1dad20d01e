#!/usr/bin/env bash
# npm run drill [-- --quick] [-- --only <regexp of phase names>] [-- --noisy-seconds <s>] [-- --noisy-rounds <n>]
# npm run drill -- --soak <minutes> [--projects <n>]
#
# The fault drills (scripts/drill/drill.mjs): builds, brings the local stack up (idempotent), uses a
# database of its own (mas_drill; DRILL_DATABASE_URL overrides), then runs the apps from dist/ on
# their own ports, task queue and consumer groups under a bounded keyed load, injects each fault
# (kill -9 of each app, Kafka stop/start, Temporal restart, PostgreSQL restart, a deploy of a
# changed worker build and its rollback; a noisy neighbour at every limit beside a well-behaved
# project; then two replicas of each app: one api killed behind HAProxy when it is installed, and
# one of each app killed), checks the invariants after each and prints one table. --soak runs no fault: mixed
# load (one-shot, tool rounds, sessions, streams, cancels, background) over many projects for the
# minutes given, then checks the money invariant and that no app's RSS grew after warm-up.
# Exit status: 0 every invariant held, 1 one broke or the drill overran its time budget
# (scripts/drill/harness.sh), 2 the drill could not run.
#
# The faults act on the shared local stack: each outage lasts seconds, and every component is
# started again whatever happens. Logs go to ${TMPDIR:-/tmp}/mas-drill-<timestamp>/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

for arg in "$@"; do
  case "$arg" in
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  esac
done

started=$SECONDS
log() { echo "[drill $((SECONDS - started))s] $*" >&2; }

npm run --silent build || { log "the build failed"; exit 2; }
bash scripts/stack.sh up >&2
# shellcheck source=../stack/env.sh
. scripts/stack/env.sh
if [ -n "${DRILL_DATABASE_URL:-}" ]; then
  export DATABASE_URL="$DRILL_DATABASE_URL"
elif [ -z "$MAS_EXTERNAL_DATABASE" ]; then
  psql -h 127.0.0.1 -p "$MAS_PG_PORT" -U mas -d postgres -Atc "select 1 from pg_database where datname = 'mas_drill'" | grep -q 1 \
    || createdb -h 127.0.0.1 -p "$MAS_PG_PORT" -U mas mas_drill
  export DATABASE_URL="postgres://mas@127.0.0.1:$MAS_PG_PORT/mas_drill"
  # The stack's own PostgreSQL: the drill may restart it (never an external one).
  export DRILL_LOCAL_POSTGRES=1
fi
node dist/apps/cli/src/main.js migrate >&2

DRILL_TS="$(date -u +%Y%m%dT%H%M%SZ)"
DRILL_RUN_DIR="${TMPDIR:-/tmp}/mas-drill-$DRILL_TS"
mkdir -p "$DRILL_RUN_DIR"
: >"$DRILL_RUN_DIR/pids"
export DRILL_TS DRILL_RUN_DIR
log "logs in $DRILL_RUN_DIR"

harness=
# Stops the harness (which stops its apps), then any app it recorded that is still alive (only
# pids whose command line is one of ours, in case a pid was reused), and brings the stack back up
# in case a fault was cut short.
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
  bash scripts/stack.sh up >/dev/null 2>&1 || true
  exit "$code"
}
trap cleanup EXIT INT TERM

# shellcheck source=harness.sh
. scripts/drill/harness.sh
run_harness "$@"
