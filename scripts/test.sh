#!/usr/bin/env bash
# npm test: brings the local stack up if it is not, then type-checks, lints, and runs the unit,
# workflow, integration and end-to-end tests against the real PostgreSQL, Kafka and Temporal.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

[ -d node_modules/@nestjs/core ] || npm install --no-audit --no-fund
bash scripts/stack.sh up
# Chromium for the Temporal UI test (Debian's package; installed when missing and root).
bash scripts/browser.sh
# shellcheck source=stack/env.sh
. scripts/stack/env.sh
# Tests run against their own database; the guard in test/support refuses one without "test" in its name.
if [ -n "$MAS_EXTERNAL_DATABASE" ]; then
  export DATABASE_URL="${TEST_DATABASE_URL:-$DATABASE_URL}"
else
  export DATABASE_URL="postgres://mas@127.0.0.1:$MAS_PG_PORT/mas_test"
  # Fresh for each run, so a test's time does not grow with this machine's earlier runs.
  bash scripts/stack.sh fresh-test-database
fi
# The tests' projector reads the shared Kafka in consumer groups of its own, so a running
# `npm start` (another database) never takes the tests' events, nor the tests its.
export KAFKA_GROUP_PREFIX="${KAFKA_GROUP_PREFIX:-mas-test}"
MAS_TEMPORAL_TEST_SERVER="$(bash scripts/stack.sh test-server)"
export MAS_TEMPORAL_TEST_SERVER
# Helm for the chart's test (helm lint, helm template: test/integration/helm-chart.int-spec.ts).
MAS_HELM="$(bash scripts/helm.sh path)"
export MAS_HELM

npm run --silent typecheck
npm run --silent lint
# The formatter (Prettier, .prettierrc.json): a file it would change fails the run; `npm run format` fixes it.
npm run --silent format:check
npm run --silent build
node dist/apps/cli/src/main.js migrate
# The tests' consumer groups start from the topics' ends: what drills and `npm start` wrote since
# the last run is not theirs to read (scripts/stack/kafka-test-groups.mjs).
node scripts/stack/kafka-test-groups.mjs

results="$(mktemp)"
status=0
# --forceExit: a suite whose beforeAll failed half-way may leave a consumer or a relay running;
# its failure is reported either way, and it must not hold the run open until CI's time is up.
NODE_OPTIONS="--experimental-vm-modules ${NODE_OPTIONS:-}" node node_modules/jest/bin/jest.js \
  --runInBand --forceExit --json --outputFile="$results" "$@" || status=$?
# The plain closing line, so a run that executed no test cannot pass unnoticed.
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`);
  if (r.numTotalTests === 0) { console.error("no test was executed"); process.exit(1); }
' "$results" || status=1
rm -f "$results"
exit "$status"
