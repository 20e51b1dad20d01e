#!/usr/bin/env bash
# The end-to-end suite against the cluster profile (`npm run stack -- up --profile cluster` first):
# the tests' apps (in the test process, on task queues of their own) reach the cluster's Temporal
# over mTLS, its three Kafka brokers over SSL and its PostgreSQL with sslmode=verify-full, in a
# fresh mas_test database there. Not part of `npm test` (time).
#
#   scripts/stack/cluster-e2e.sh            the quick subset (QUICK below), then Kafka over SASL
#   scripts/stack/cluster-e2e.sh --all      every e2e file but those that restart the default
#                                           stack's components or run a dev server of their own
#   scripts/stack/cluster-e2e.sh FILE...    those files (extra arguments go to Jest)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=../node-path.sh
. scripts/node-path.sh

# outages, streaming-outage: stop and start the default stack's PostgreSQL, Kafka and Temporal
# (test/support/stack.ts), which other work on this machine uses; temporal-ui: the dev server's
# UI, started by the test itself.
EXCLUDED=(test/e2e/outages.e2e-spec.ts test/e2e/streaming-outage.e2e-spec.ts test/e2e/temporal-ui.e2e-spec.ts)
QUICK=(test/e2e/health.e2e-spec.ts test/e2e/agent.e2e-spec.ts test/e2e/idempotency.e2e-spec.ts test/e2e/streaming.e2e-spec.ts
  test/e2e/metering.e2e-spec.ts test/e2e/money-invariant.e2e-spec.ts test/e2e/read-models.e2e-spec.ts test/e2e/payload-encryption.e2e-spec.ts)

files=()
case "${1:-}" in
  "") files=("${QUICK[@]}") ;;
  --all)
    shift
    for f in test/e2e/*.e2e-spec.ts; do
      [[ " ${EXCLUDED[*]} " == *" $f "* ]] || files+=("$f")
    done ;;
esac

bash scripts/stack/cluster.sh status | grep -q '^api: ready' || { echo "[cluster-e2e] the cluster profile is not up: npm run stack -- up --profile cluster" >&2; exit 1; }
eval "$(bash scripts/stack/cluster.sh env mas_test)"
export KAFKA_GROUP_PREFIX="${KAFKA_GROUP_PREFIX:-mas-test}"
MAS_TEMPORAL_TEST_SERVER="$(MAS_HOME="${MAS_DEFAULT_HOME:-$HOME/.cache/managed-agent-service}" bash scripts/stack.sh test-server)"
export MAS_TEMPORAL_TEST_SERVER
bash scripts/stack/cluster.sh fresh-test-database

npm run --silent build
node dist/apps/cli/src/main.js migrate
results="$(mktemp)"
status=0
NODE_OPTIONS="--experimental-vm-modules ${NODE_OPTIONS:-}" node node_modules/jest/bin/jest.js \
  --runInBand --forceExit --json --outputFile="$results" ${files[@]+"${files[@]}"} "$@" || status=$?
summary="$(node -e '
  const text = require("fs").readFileSync(process.argv[1], "utf8");
  if (!text) { console.error("cluster e2e: Jest ended without results (a test ended the process: see above)"); process.exit(1); }
  const r = JSON.parse(text);
  console.log(`cluster e2e: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped (${r.numTotalTestSuites} files)`);
  // With each failed test its first lines: CI shows only the end of what a run printed.
  for (const s of r.testResults) {
    if (s.status === "passed") continue;
    console.log(`  failed: ${s.name.replace(process.cwd() + "/", "")}${s.failureMessage && !s.assertionResults.length ? `: ${s.failureMessage}` : ""}`);
    for (const t of s.assertionResults.filter((a) => a.status === "failed")) {
      const why = (t.failureMessages[0] ?? "").replace(/\u001b\[[0-9;]*m/g, "").split("\n").filter((l) => l.trim()).slice(0, 8);
      console.log(`    ${t.fullName}\n${why.map((l) => `      ${l}`).join("\n")}`);
    }
  }
  if (r.numTotalTests === 0) { console.error("no test was executed"); process.exit(1); }
' "$results")" || status=1
echo "$summary"
rm -f "$results"

# SASL: the apps' Kafka client over the brokers' SASL_SSL listeners, by user name and password
# instead of a client certificate, as on MSK (SCRAM-SHA-512) and Confluent Cloud (PLAIN): a message
# through and a wrong password refused, then the money invariant's e2e file with every app of the
# test reaching Kafka that way.
if [ -z "${1:-}" ]; then
  for mechanism in scram-sha-512 plain; do
    (
      eval "$(bash scripts/stack/cluster.sh env-sasl mas_test "$mechanism")"
      export KAFKA_GROUP_PREFIX="mas-test-sasl-$mechanism"
      node scripts/stack/kafka-sasl-check.mjs
      NODE_OPTIONS="--experimental-vm-modules ${NODE_OPTIONS:-}" node node_modules/jest/bin/jest.js \
        --runInBand --forceExit test/e2e/money-invariant.e2e-spec.ts
    ) || { echo "cluster e2e: Kafka over SASL ($mechanism) failed" >&2; status=1; }
  done
  # The e2e summary again, at the very end, where CI's tail of the output shows it.
  [ "$status" = 0 ] || echo "$summary"
fi
exit "$status"
