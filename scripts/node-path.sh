# Sourced by every script that runs node (scripts/stack/env.sh sources it, so most do so through
# that): the project's Node.js (package.json's `node` package, >= 24, in node_modules/.bin) before
# the machine's, as `npm run` puts it. A script started directly (`bash scripts/stack/cluster-e2e.sh`,
# as .ci/run starts it) otherwise ran the machine's own node, Node 20 on a new machine, under which
# run_javascript's sandbox thread cannot start (its TypeScript source, thread CPU time).
PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/node_modules/.bin:$PATH"
export PATH
