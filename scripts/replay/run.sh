#!/usr/bin/env bash
# npm run replay:record [-- --set <name>]
#
# Records the replay corpus (scripts/replay/record.mjs): builds, brings the local stack up
# (idempotent), uses a database of its own (mas_replay; REPLAY_DATABASE_URL overrides), runs the
# api, the worker, its long-activity worker and the relay from dist/ on a task queue of their own,
# drives every workflow type along its paths, and writes the histories to
# test/replay/histories/<set>/ (default set: today's date, UTC). `npm test` replays them
# (workflows/test/replay.workflow-spec.ts). Exit status: 0 written, 2 the recorder failed
# (nothing written). Logs go to ${TMPDIR:-/tmp}/mas-replay-<timestamp>/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

for arg in "$@"; do
  case "$arg" in
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  esac
done

npm run --silent build
bash scripts/stack.sh up >&2
# shellcheck source=../stack/env.sh
. scripts/stack/env.sh
if [ -n "${REPLAY_DATABASE_URL:-}" ]; then
  export DATABASE_URL="$REPLAY_DATABASE_URL"
elif [ -z "$MAS_EXTERNAL_DATABASE" ]; then
  psql -h 127.0.0.1 -p "$MAS_PG_PORT" -U mas -d postgres -Atc "select 1 from pg_database where datname = 'mas_replay'" | grep -q 1 \
    || createdb -h 127.0.0.1 -p "$MAS_PG_PORT" -U mas mas_replay
  export DATABASE_URL="postgres://mas@127.0.0.1:$MAS_PG_PORT/mas_replay"
fi
node dist/apps/cli/src/main.js migrate >&2

REPLAY_TS="$(date -u +%Y%m%dT%H%M%SZ)"
REPLAY_RUN_DIR="${TMPDIR:-/tmp}/mas-replay-$REPLAY_TS"
mkdir -p "$REPLAY_RUN_DIR"
: >"$REPLAY_RUN_DIR/pids"
export REPLAY_TS REPLAY_RUN_DIR
echo "[replay] logs in $REPLAY_RUN_DIR" >&2

harness=
# Stops the recorder (which stops its apps), then any app it started that is still alive (only
# pids whose command line is one of ours, in case a pid was reused).
cleanup() {
  local code=$?
  trap - EXIT INT TERM
  if [ -n "$harness" ] && kill -0 "$harness" 2>/dev/null; then
    kill -TERM "$harness" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$harness" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$harness" 2>/dev/null || true
  fi
  while read -r pid; do
    [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qE 'dist/apps/(api|worker|relay)/src/main\.js' \
      && kill -KILL "$pid" 2>/dev/null || true
  done <"$REPLAY_RUN_DIR/pids"
  exit "$code"
}
trap cleanup EXIT INT TERM

node scripts/replay/record.mjs "$@" &
harness=$!
wait "$harness"
