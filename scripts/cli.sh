#!/usr/bin/env bash
# npm run cli -- <command>: the operator CLI against the local stack's database (or DATABASE_URL).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=stack/env.sh
. scripts/stack/env.sh
[ -f dist/apps/cli/src/main.js ] || npm run --silent build
exec node dist/apps/cli/src/main.js "$@"
