#!/usr/bin/env bash
# npm start: installs what is missing, brings the local stack up, runs migrations, and starts the
# api, the worker (and its long-activity worker), the outbox relay, the projector and the customer console in this terminal (Ctrl-C stops them; the stack keeps running,
# `npm run stack -- down` stops it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

[ -d node_modules/@nestjs/core ] || npm install --no-audit --no-fund
bash scripts/stack.sh up
# shellcheck source=stack/env.sh
. scripts/stack/env.sh
npm run --silent build
node dist/apps/cli/src/main.js migrate

# Prometheus's /metrics of the apps that serve no HTTP otherwise (the api's is on $PORT), and
# the Temporal SDK's own metrics, which the worker merges into its /metrics (docs/operations.md).
export WORKER_METRICS_PORT="${WORKER_METRICS_PORT:-9101}" RELAY_METRICS_PORT="${RELAY_METRICS_PORT:-9102}"
export PROJECTOR_METRICS_PORT="${PROJECTOR_METRICS_PORT:-9103}" TEMPORAL_SDK_METRICS_PORT="${TEMPORAL_SDK_METRICS_PORT:-9104}"
# The dev server's UI (scripts/stack.sh) calls the codec endpoint at /codec/<token>: it can send
# neither a header nor cookies, so only this local stack takes the token in the path
# (docs/operations.md, "The codec endpoint"; the cluster profile's UI signs in with a cookie).
export MAS_CODEC_TOKEN_IN_PATH="${MAS_CODEC_TOKEN_IN_PATH:-true}"
# The bulkhead (docs/operations.md, "Long activities on a worker of their own"): streamed model
# calls and built-in tools run on worker-long, at a lower CPU priority than the rest.
export TEMPORAL_LONG_ACTIVITY_TASK_QUEUE="${TEMPORAL_LONG_ACTIVITY_TASK_QUEUE:-${TEMPORAL_TASK_QUEUE:-mas-agent}-long}"
# The apps' stdout is a pipe to the supervisor: human-readable lines when this terminal is one.
if [ -t 1 ]; then export LOG_FORMAT="${LOG_FORMAT:-pretty}"; fi
node scripts/run-apps.mjs api worker worker-long relay projector console &
apps=$!
trap 'kill -TERM "$apps" 2>/dev/null; wait "$apps"' INT TERM

api="http://127.0.0.1:$PORT"
ready=
for _ in $(seq 1 120); do
  curl -fsS "$api/readyz" >/dev/null 2>&1 && { ready=1; break; }
  kill -0 "$apps" 2>/dev/null || exit 1
  sleep 0.5
done
[ -n "$ready" ] || echo "[start] warning: $api/readyz is not ready yet: $(curl -sS "$api/readyz" 2>&1)" >&2
demo="$(node dist/apps/cli/src/main.js demo --key-file "$MAS_HOME/demo-api-key" --api-url "$api" --console-password-file "$MAS_HOME/demo-console-password")"
cat <<TXT

  Managed agent service is running.
    Operator CLI npm run cli -- --help
    API          $api   (health: $api/readyz)
    Console      ${CONSOLE_PUBLIC_URL:-http://localhost:${CONSOLE_PORT:-3001}}   (the demo owner's sign-in is below)
    Temporal UI  $TEMPORAL_UI_URL
    Metrics      $api/metrics, worker :$WORKER_METRICS_PORT, relay :$RELAY_METRICS_PORT, projector :$PROJECTOR_METRICS_PORT (/metrics)
$demo
    Logs         $MAS_HOME/logs   (stack: npm run stack -- logs kafka|temporal|postgres)
  Ctrl-C stops the apps; \`npm run stack -- down\` stops PostgreSQL, Kafka and Temporal.

TXT
wait "$apps"
