#!/usr/bin/env bash
# npm run bench [-- --quick [--profile]] [-- --no-profile] [-- --no-experiments]
# npm run bench -- --only streams [--quick]   (open streams' cost to PostgreSQL: scripts/bench/streams.mjs)
# npm run bench -- --only round-trips [--quick]   (PostgreSQL round trips per endpoint: scripts/bench/round-trips.mjs)
#
# Builds, brings the local stack up (idempotent), applies migrations, creates this run's first
# project with the operator CLI, then runs scripts/bench/bench.mjs: two scripted model servers,
# the api, worker, relay and projector from dist/ on their own port and task queue (a running `npm start`
# is not disturbed), the scenarios, one table on stdout and bench/results/<timestamp>.json.
# Logs and CPU profiles go to ${TMPDIR:-/tmp}/mas-bench-<timestamp>/. See docs/performance.md.
#
# The trap stops every process the run started, by pid, whatever happens; the stack keeps running.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

harness_script=scripts/bench/bench.mjs
prev=
for arg in "$@"; do
  if [ "$prev" = --only ]; then
    case "$arg" in
      streams | round-trips) harness_script="scripts/bench/$arg.mjs" ;;
      *) echo "[bench] --only takes: streams, round-trips" >&2; exit 2 ;;
    esac
    prev=
    continue
  fi
  prev=$arg
  case "$arg" in
    --only) ;;
    --quick | --profile | --no-profile | --no-experiments) ;;
    -h | --help)
      sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "[bench] unknown option: $arg (options: --quick, --profile, --no-profile, --no-experiments, --only streams|round-trips)" >&2
      exit 2
      ;;
  esac
done

started=$SECONDS
log() { echo "[bench $((SECONDS - started))s] $*" >&2; }

log "building"
npm run --silent build || { log "the build failed: the working tree does not compile, nothing was measured"; exit 1; }
bash scripts/stack.sh up >&2
# shellcheck source=../stack/env.sh
. scripts/stack/env.sh
node dist/apps/cli/src/main.js migrate >&2
log "built, stack up, database migrated"

BENCH_TS="$(date -u +%Y%m%dT%H%M%SZ)"
BENCH_RUN_DIR="${TMPDIR:-/tmp}/mas-bench-$BENCH_TS"
mkdir -p "$BENCH_RUN_DIR"
: >"$BENCH_RUN_DIR/pids"
export BENCH_TS BENCH_RUN_DIR

harness=
# Stops the harness (which stops its children), then anything it recorded that is still alive:
# only pids whose command line is one of ours, in case a pid was reused.
cleanup() {
  local code=$?
  trap - EXIT INT TERM
  if [ -n "$harness" ] && kill -0 "$harness" 2>/dev/null; then
    kill -TERM "$harness" 2>/dev/null || true
    for _ in $(seq 1 200); do kill -0 "$harness" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$harness" 2>/dev/null || true
  fi
  local ours=()
  while read -r pid; do
    [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" \
      | grep -qE 'scripts/bench/(model-server|floor/worker)\.mjs|dist/apps/(api|worker|relay|projector)/src/main\.js|start-dev .*mas-bench-' && ours+=("$pid")
  done <"$BENCH_RUN_DIR/pids"
  if [ "${#ours[@]}" -gt 0 ]; then
    log "stopping leftover processes: ${ours[*]}"
    kill -TERM "${ours[@]}" 2>/dev/null || true
    for _ in $(seq 1 100); do
      local alive=0
      for pid in "${ours[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
    kill -KILL "${ours[@]}" 2>/dev/null || true
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Free loopback ports for the api and the two model servers.
read -r BENCH_API_PORT BENCH_MODEL_PORT_0 BENCH_MODEL_PORT_200 < <(node -e '
  const net = require("node:net");
  const servers = [0, 1, 2].map(() => net.createServer());
  Promise.all(servers.map((s) => new Promise((resolve) => s.listen(0, "127.0.0.1", () => resolve(s.address().port)))))
    .then((ports) => { process.stdout.write(ports.join(" ") + "\n"); servers.forEach((s) => s.close()); });
')
[ -n "${BENCH_MODEL_PORT_200:-}" ] || { log "could not find free loopback ports"; exit 1; }
BENCH_MODEL_KEY="bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export BENCH_API_PORT BENCH_MODEL_PORT_0 BENCH_MODEL_PORT_200 BENCH_MODEL_KEY
# The stack's Temporal CLI, for the private dev servers of the full run's experiments.
BENCH_TEMPORAL_BIN="$MAS_HOME/bin/temporal"
[ -x "$BENCH_TEMPORAL_BIN" ] && export BENCH_TEMPORAL_BIN

# This run's first project, through the operator CLI. Only `chat`: a request then offers the model
# no built-in tools, so the scripted model answers text unless the caller sends its own tools.
cli() { node dist/apps/cli/src/main.js "$@"; }
json_field() { node -e 'process.stdout.write(String(JSON.parse(require("node:fs").readFileSync(0, "utf8"))[process.argv[1]]))' "$1"; }
BENCH_PRIMARY_PROJECT="$(cli project create --name "bench-$BENCH_TS" --plan pro --capabilities chat --credits 100000000 --json | json_field id)"
cli project set-model "$BENCH_PRIMARY_PROJECT" --provider openai --model bench \
  --base-url "http://127.0.0.1:$BENCH_MODEL_PORT_0/v1" --key-from-env BENCH_MODEL_KEY >&2
BENCH_PRIMARY_KEY="$(cli key create "$BENCH_PRIMARY_PROJECT" --label 'npm run bench' --json | json_field key)"
export BENCH_PRIMARY_PROJECT BENCH_PRIMARY_KEY
log "project bench-$BENCH_TS ($BENCH_PRIMARY_PROJECT); logs in $BENCH_RUN_DIR"

# Read-only: --no-optional-locks keeps git from refreshing the index of a shared working tree.
BENCH_GIT_DIRTY=0
[ -n "$(git --no-optional-locks status --porcelain 2>/dev/null | head -1)" ] && BENCH_GIT_DIRTY=1
export BENCH_GIT_DIRTY

node "$harness_script" "$@" &
harness=$!
wait "$harness"
