#!/usr/bin/env bash
# The cluster profile of the local stack (`npm run stack -- up --profile cluster`, issue 31): the
# production topology on one machine, beside the default stack and sharing nothing with it.
#   - PostgreSQL with TLS only (hostssl; clients use sslmode=verify-full);
#   - a Temporal server built from its Go module at the version the dev server embeds, on that
#     PostgreSQL (persistence and visibility, schema by temporal-sql-tool), its frontend, history,
#     matching and worker services as four processes, mTLS between them and to the frontend; the
#     Temporal UI server pointed at it, decrypting payloads through the apps' codec endpoint;
#   - Kafka: three KRaft brokers (each also a controller), an SSL listener with client
#     certificates, replication 3, min.insync.replicas 2;
#   - the apps: two apis behind HAProxy (Debian's package), two workers and a long-activity worker, two relays, two
#     projectors and the console, each supervised by scripts/run-apps.mjs.
# A CA generated here with openssl signs every certificate. Everything lives under
# $MAS_CLUSTER_HOME (default ~/.cache/managed-agent-service-cluster); ports in docs/deploy.md.
#
#   scripts/stack/cluster.sh up [postgres|kafka|temporal|apps]|down|status|env [DATABASE]|logs [NAME]|kill NAME|start|
#     kafka-controller|psql ARGS|fresh-test-database
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEFAULT_HOME="${MAS_HOME:-$HOME/.cache/managed-agent-service}"

# The cluster's own home and ports: the default stack's variables (if this shell sourced env.sh)
# must not leak into it.
unset DATABASE_URL KAFKA_BROKERS TEMPORAL_ADDRESS TEMPORAL_UI_URL PORT MAS_PG_DATA
export MAS_HOME="${MAS_CLUSTER_HOME:-$HOME/.cache/managed-agent-service-cluster}"
export MAS_PG_PORT="${MAS_CLUSTER_PG_PORT:-26432}"
export MAS_TEMPORAL_PORT="${MAS_CLUSTER_TEMPORAL_PORT:-27233}"
export MAS_TEMPORAL_UI_PORT="${MAS_CLUSTER_TEMPORAL_UI_PORT:-28233}"
KAFKA_PORT_BASE="${MAS_CLUSTER_KAFKA_PORT_BASE:-26090}" # broker i: SSL base+i, inter-broker base+100+i, controller base+200+i
LB_PORT="${MAS_CLUSTER_LB_PORT:-23000}"                 # HAProxy; the apis on LB_PORT+1, LB_PORT+2
CONSOLE_PORT_CLUSTER="${MAS_CLUSTER_CONSOLE_PORT:-23010}"
METRICS_BASE="${MAS_CLUSTER_METRICS_BASE:-23100}"        # apps' /metrics: base + 10 x instance + app
export PORT="$LB_PORT"
# shellcheck source=env.sh
. "$ROOT/scripts/stack/env.sh"
# shellcheck source=../go-path.sh
. "$ROOT/scripts/go-path.sh"

TEMPORAL_SERVER_VERSION=1.29.1 # what `temporal --version` (CLI $MAS_TEMPORAL_CLI_VERSION) reports as its server
TEMPORAL_UI_VERSION=2.42.1     # and as its UI
TEMPORAL_SHARDS=16
TLS="$MAS_HOME/tls"
RUN="$MAS_HOME/run"
LOGS="$MAS_HOME/logs"
DATA="$MAS_HOME/data"
BIN="$MAS_HOME/bin"
mkdir -p "$RUN" "$LOGS" "$DATA" "$BIN"

say() { printf '[cluster] %s\n' "$*" >&2; }
die() { printf '[cluster] error: %s\n' "$*" >&2; exit 1; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
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
stop_pid() {
  local name=$1
  pid_alive "$name" || { rm -f "$RUN/$name.pid"; return 0; }
  local pid; pid="$(cat "$RUN/$name.pid")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 80); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$RUN/$name.pid"
}
go_bin() { command -v go 2>/dev/null || die "Go 1.25 or later is required to build the Temporal server (https://go.dev/doc/install)"; }

# ---------------------------------------------------------------- the CA and certificates

# One CA; one server certificate for every engine (localhost and 127.0.0.1: everything is on
# loopback), also used by the servers as clients of each other (Temporal's internode mTLS, Kafka's
# inter-broker SSL); one client certificate for the apps and the tools.
tls_up() {
  [ -f "$TLS/client.key" ] && return
  say "tls: generating a CA and certificates with openssl in $TLS (once)"
  mkdir -p "$TLS"
  (
    cd "$TLS"
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=managed-agent-service cluster CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    leaf() { # leaf NAME CN EXTENDED-KEY-USAGE [SAN]
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
      {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$3"
        [ -n "${4:-}" ] && echo "subjectAltName=$4"
      } >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 825 -sha256 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    leaf server localhost serverAuth,clientAuth "DNS:localhost,IP:127.0.0.1"
    leaf client mas-apps clientAuth
    # Kafka's PEM key store: the key and its certificate chain in one file.
    cat server.key server.crt >kafka-broker.pem
    chmod 644 ca.crt server.crt client.crt
  )
}

# ---------------------------------------------------------------- PostgreSQL (TLS only)

pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do [ -x "$dir/pg_ctl" ] && { echo "$dir"; return; }; done
}
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
PG_SSL="sslmode=verify-full&sslrootcert=$TLS/ca.crt"
# psql and the other libpq tools: TLS verified against the CA, as the apps connect.
pg_tool() { PGSSLMODE=verify-full PGSSLROOTCERT="$TLS/ca.crt" "$(pg_bin)/$1" -h 127.0.0.1 -p "$MAS_PG_PORT" -U mas "${@:2}"; }

postgres_up() {
  local bin; bin="$(pg_bin)"
  [ -n "$bin" ] || die "PostgreSQL is not installed: run 'npm run stack -- up' once (it installs Debian's postgresql), or apt-get install postgresql"
  local certs; certs="$(dirname "$MAS_PG_DATA")/tls-$MAS_PG_PORT"
  if [ ! -f "$MAS_PG_DATA/PG_VERSION" ]; then
    say "postgres: creating a cluster in $MAS_PG_DATA"
    mkdir -p "$MAS_PG_DATA"
    [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$(dirname "$MAS_PG_DATA")"
    as_pg "$bin/initdb" -D "$MAS_PG_DATA" -U mas --auth=trust -E UTF8 --locale=C.UTF-8 >"$LOGS/postgres-init.log" 2>&1 \
      || { tail -n 20 "$LOGS/postgres-init.log" >&2; die "initdb failed"; }
    # TCP only over TLS (hostssl); a plaintext connection is refused. Trust, as the default stack:
    # a private cluster on loopback (a production one adds passwords or client certificates).
    printf '%s\n' "local all all trust" "hostssl all all 127.0.0.1/32 trust" "hostnossl all all 0.0.0.0/0 reject" >"$MAS_PG_DATA/pg_hba.conf"
  fi
  # The server's key must belong to the server's user and be readable by it alone.
  mkdir -p "$certs"
  cp "$TLS/server.crt" "$TLS/server.key" "$certs/"
  chmod 600 "$certs/server.key"
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$certs"
  if ! as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" status >/dev/null 2>&1; then
    say "postgres: starting on 127.0.0.1:$MAS_PG_PORT (TLS only)"
    as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" -l "$MAS_PG_DATA.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $MAS_PG_PORT -k $MAS_PG_DATA -c max_connections=400 -c ssl=on -c ssl_cert_file=$certs/server.crt -c ssl_key_file=$certs/server.key" start >/dev/null \
      || { tail -n 20 "$MAS_PG_DATA.log" >&2; die "postgres did not start"; }
  fi
  ln -sf "$MAS_PG_DATA.log" "$LOGS/postgres.log"
  wait_for postgres 60 pg_tool psql -d postgres -Atc 'select 1'
  local db
  for db in mas mas_test; do
    [ -n "$(pg_tool psql -d postgres -Atc "select 1 from pg_database where datname='$db'")" ] || pg_tool createdb "$db"
  done
}

postgres_down() {
  local bin; bin="$(pg_bin)"
  [ -n "$bin" ] && [ -f "$MAS_PG_DATA/PG_VERSION" ] || return 0
  as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" status >/dev/null 2>&1 && as_pg "$bin/pg_ctl" -D "$MAS_PG_DATA" -m fast stop >/dev/null
  return 0
}

# ---------------------------------------------------------------- Temporal (built from its module)

# temporal-server and temporal-sql-tool from go.temporal.io/server, the UI server from
# github.com/temporalio/ui-server: built once into $MAS_HOME/bin, reused after (a rebuild only when
# the version changes). The CLI (operator commands) is copied from the default stack's home.
temporal_install() {
  local go; go="$(go_bin)"
  if [ ! -x "$BIN/temporal-server-$TEMPORAL_SERVER_VERSION" ] || [ ! -x "$BIN/temporal-sql-tool-$TEMPORAL_SERVER_VERSION" ]; then
    say "temporal: building temporal-server and temporal-sql-tool v$TEMPORAL_SERVER_VERSION with go install (once; several minutes)"
    local started=$SECONDS tmp; tmp="$(mktemp -d "$MAS_HOME/gobuild.XXXXXX")"
    GOBIN="$tmp" CGO_ENABLED=0 "$go" install "go.temporal.io/server/cmd/server@v$TEMPORAL_SERVER_VERSION" \
      "go.temporal.io/server/cmd/tools/sql@v$TEMPORAL_SERVER_VERSION" >"$LOGS/temporal-build.log" 2>&1 \
      || { tail -n 20 "$LOGS/temporal-build.log" >&2; die "go install of the Temporal server failed"; }
    mv "$tmp/server" "$BIN/temporal-server-$TEMPORAL_SERVER_VERSION"
    mv "$tmp/sql" "$BIN/temporal-sql-tool-$TEMPORAL_SERVER_VERSION"
    rm -rf "$tmp"
    say "temporal: built in $((SECONDS - started))s"
  fi
  if [ ! -x "$BIN/temporal-ui-server-$TEMPORAL_UI_VERSION" ]; then
    say "temporal: building the Temporal UI server v$TEMPORAL_UI_VERSION with go install (once)"
    local started=$SECONDS tmp; tmp="$(mktemp -d "$MAS_HOME/gobuild.XXXXXX")"
    GOBIN="$tmp" CGO_ENABLED=0 "$go" install "github.com/temporalio/ui-server/v2/cmd/server@v$TEMPORAL_UI_VERSION" >"$LOGS/temporal-ui-build.log" 2>&1 \
      || { tail -n 20 "$LOGS/temporal-ui-build.log" >&2; die "go install of the Temporal UI server failed"; }
    mv "$tmp/server" "$BIN/temporal-ui-server-$TEMPORAL_UI_VERSION"
    rm -rf "$tmp"
    say "temporal: UI built in $((SECONDS - started))s"
  fi
  if [ ! -x "$BIN/temporal" ]; then
    if [ -x "$DEFAULT_HOME/bin/temporal" ]; then cp "$DEFAULT_HOME/bin/temporal" "$BIN/temporal"
    else MAS_HOME="$BIN/.." bash "$ROOT/scripts/stack.sh" temporal-cli >/dev/null; fi
  fi
}

# The CLI against the cluster's frontend, with the apps' client certificate.
tctl() {
  "$BIN/temporal" "$@" --address "127.0.0.1:$MAS_TEMPORAL_PORT" --tls-ca-path "$TLS/ca.crt" \
    --tls-cert-path "$TLS/client.crt" --tls-key-path "$TLS/client.key" --tls-server-name localhost
}
temporal_healthy() { tctl operator cluster health 2>/dev/null | grep -q SERVING; }

sql_tool() { # sql_tool DATABASE COMMAND...
  "$BIN/temporal-sql-tool-$TEMPORAL_SERVER_VERSION" --ep 127.0.0.1 -p "$MAS_PG_PORT" -u mas --pl postgres12 --db "$1" \
    --tls --tls-ca-file "$TLS/ca.crt" --tls-server-name localhost "${@:2}"
}

temporal_config() {
  local conf="$MAS_HOME/temporal/config"
  mkdir -p "$conf"
  local sql
  sql() { # the persistence settings of one database
    cat <<EOF
      sql:
        pluginName: postgres12
        databaseName: $1
        connectAddr: 127.0.0.1:$MAS_PG_PORT
        connectProtocol: tcp
        user: mas
        password: ""
        maxConns: $2
        maxIdleConns: $2
        maxConnLifetime: 1h
        tls:
          enabled: true
          caFile: $TLS/ca.crt
          enableHostVerification: true
          serverName: localhost
EOF
  }
  local server_tls="        certFile: $TLS/server.crt
        keyFile: $TLS/server.key
        requireClientAuth: true
        clientCaFiles: [$TLS/ca.crt]"
  local client_tls="        serverName: localhost
        rootCaFiles: [$TLS/ca.crt]"
  cat >"$conf/cluster.yaml" <<EOF
# Written by scripts/stack/cluster.sh on each up: edits are lost.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: $TEMPORAL_SHARDS
  datastores:
    default:
$(sql temporal 20)
    visibility:
$(sql temporal_visibility 10)
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  pprof:
    port: 0
  tls:
    internode:
      server:
$server_tls
      client:
$client_tls
    frontend:
      server:
$server_tls
      client:
$client_tls
    systemWorker:
      certFile: $TLS/client.crt
      keyFile: $TLS/client.key
      client:
$client_tls
services:
  frontend:
    rpc: { grpcPort: $MAS_TEMPORAL_PORT, membershipPort: $((MAS_TEMPORAL_PORT + 700)), httpPort: $((MAS_TEMPORAL_PORT + 10)), bindOnLocalHost: true }
  history:
    rpc: { grpcPort: $((MAS_TEMPORAL_PORT + 1)), membershipPort: $((MAS_TEMPORAL_PORT + 701)), bindOnLocalHost: true }
  matching:
    rpc: { grpcPort: $((MAS_TEMPORAL_PORT + 2)), membershipPort: $((MAS_TEMPORAL_PORT + 702)), bindOnLocalHost: true }
  worker:
    rpc: { grpcPort: $((MAS_TEMPORAL_PORT + 6)), membershipPort: $((MAS_TEMPORAL_PORT + 706)), bindOnLocalHost: true }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: localhost:$MAS_TEMPORAL_PORT
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: $conf/dynamicconfig.yaml
  pollInterval: 10s
EOF
  # As the default stack's dev server runs (scripts/stack.sh temporal_up), less its SQLite
  # settings, plus the dev server's own defaults that the tests rely on (search attributes visible
  # at once after they are created).
  cat >"$conf/dynamicconfig.yaml" <<EOF
frontend.enableUpdateWorkflowExecution:
  - value: true
frontend.enableExecuteMultiOperation:
  - value: true
system.enableActivityEagerExecution:
  - value: true
matching.maxDeployments:
  - value: 100000
system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
frontend.persistenceMaxQPS:
  - value: 10000
history.persistenceMaxQPS:
  - value: 45000
EOF
  cat >"$conf/ui.yaml" <<EOF
temporalGrpcAddress: 127.0.0.1:$MAS_TEMPORAL_PORT
host: 127.0.0.1
port: $MAS_TEMPORAL_UI_PORT
enableUi: true
defaultNamespace: $TEMPORAL_NAMESPACE
cors:
  allowOrigins: [http://127.0.0.1:$MAS_TEMPORAL_UI_PORT, http://localhost:$MAS_TEMPORAL_UI_PORT]
tls:
  caFile: $TLS/ca.crt
  certFile: $TLS/client.crt
  keyFile: $TLS/client.key
  enableHostVerification: true
  serverName: localhost
codec:
  endpoint: http://127.0.0.1:$LB_PORT/codec
  includeCredentials: true
EOF
}

temporal_schema() {
  [ -f "$DATA/temporal-schema-$TEMPORAL_SERVER_VERSION" ] && return
  say "temporal: creating its databases and schemas with temporal-sql-tool"
  local db schema
  for db in temporal temporal_visibility; do
    schema=postgresql/v12/temporal
    [ "$db" = temporal_visibility ] && schema=postgresql/v12/visibility
    [ -n "$(pg_tool psql -d postgres -Atc "select 1 from pg_database where datname='$db'")" ] || sql_tool "$db" create-database >>"$LOGS/temporal-schema.log" 2>&1
    # setup-schema once (version 0.0), then update-schema to the newest this server knows; both idempotent.
    if [ -z "$(pg_tool psql -d "$db" -Atc "select 1 from information_schema.tables where table_name='schema_version'")" ]; then
      sql_tool "$db" setup-schema -v 0.0 >>"$LOGS/temporal-schema.log" 2>&1 || { tail -n 20 "$LOGS/temporal-schema.log" >&2; die "temporal-sql-tool setup-schema failed on $db"; }
    fi
    sql_tool "$db" update-schema --schema-name "$schema" >>"$LOGS/temporal-schema.log" 2>&1 || { tail -n 20 "$LOGS/temporal-schema.log" >&2; die "temporal-sql-tool update-schema failed on $db"; }
  done
  : >"$DATA/temporal-schema-$TEMPORAL_SERVER_VERSION"
}

TEMPORAL_SERVICES=(frontend history matching worker)

temporal_start_service() {
  local svc=$1 name="temporal-$1"
  pid_alive "$name" && return
  $DETACH "$BIN/temporal-server-$TEMPORAL_SERVER_VERSION" --root "$MAS_HOME/temporal" --config config --env cluster --allow-no-auth \
    start --service "$svc" >>"$LOGS/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
}

temporal_up() {
  temporal_install
  temporal_config
  temporal_schema
  local svc
  for svc in history matching frontend worker; do temporal_start_service "$svc"; done
  say "temporal: frontend on 127.0.0.1:$MAS_TEMPORAL_PORT (mTLS), history, matching, worker as separate processes"
  wait_for temporal-frontend 120 temporal_healthy
  if ! tctl operator namespace describe --namespace "$TEMPORAL_NAMESPACE" >/dev/null 2>&1; then
    tctl operator namespace create --namespace "$TEMPORAL_NAMESPACE" --retention 72h >>"$LOGS/temporal-frontend.log" 2>&1 || die "could not create namespace $TEMPORAL_NAMESPACE"
  fi
  local sa
  for sa in ProjectId=Keyword AgentStatus=Keyword Capabilities=KeywordList; do
    tctl operator search-attribute list --namespace "$TEMPORAL_NAMESPACE" 2>/dev/null | grep -qw "${sa%=*}" && continue
    wait_for temporal-frontend 60 tctl operator search-attribute create --namespace "$TEMPORAL_NAMESPACE" --name "${sa%=*}" --type "${sa#*=}"
  done
  if ! pid_alive temporal-ui; then
    $DETACH "$BIN/temporal-ui-server-$TEMPORAL_UI_VERSION" --root "$MAS_HOME/temporal" --config config --env ui start >>"$LOGS/temporal-ui.log" 2>&1 &
    echo $! >"$RUN/temporal-ui.pid"
  fi
  wait_for temporal-ui 30 port_open "$MAS_TEMPORAL_UI_PORT"
}

# ---------------------------------------------------------------- Kafka: three KRaft brokers

kafka_port() { echo $((KAFKA_PORT_BASE + $1)); }
kafka_brokers() { echo "127.0.0.1:$(kafka_port 1),127.0.0.1:$(kafka_port 2),127.0.0.1:$(kafka_port 3)"; }
# The SASL_SSL listeners (base+300+i): server certificate only, clients authenticate with a user
# name and password, as on Confluent Cloud (PLAIN) and MSK (SCRAM-SHA-512).
kafka_sasl_brokers() { echo "127.0.0.1:$((KAFKA_PORT_BASE + 301)),127.0.0.1:$((KAFKA_PORT_BASE + 302)),127.0.0.1:$((KAFKA_PORT_BASE + 303))"; }
KAFKA_SASL_USER=mas
kafka_sasl_password() {
  [ -s "$MAS_HOME/kafka-sasl-password" ] || (umask 077 && openssl rand -hex 24 >"$MAS_HOME/kafka-sasl-password")
  cat "$MAS_HOME/kafka-sasl-password"
}

kafka_install() {
  KAFKA_DIR="$MAS_HOME/kafka-$MAS_KAFKA_VERSION"
  if ! ls "$KAFKA_DIR/lib"/kafka_2.13-*.jar >/dev/null 2>&1; then
    if ls "$DEFAULT_HOME/kafka-$MAS_KAFKA_VERSION/lib"/kafka_2.13-*.jar >/dev/null 2>&1; then
      cp -r "$DEFAULT_HOME/kafka-$MAS_KAFKA_VERSION" "$KAFKA_DIR"
    else
      command -v mvn >/dev/null || die "Maven is required (apt-get install maven)"
      say "kafka: resolving kafka_2.13:$MAS_KAFKA_VERSION from Maven Central (once)"
      mkdir -p "$KAFKA_DIR"
      cp "$ROOT/scripts/stack/kafka-pom.xml" "$KAFKA_DIR/pom.xml"
      (cd "$KAFKA_DIR" && mvn -B -q dependency:copy-dependencies -DoutputDirectory=lib -DincludeScope=runtime) >"$LOGS/kafka-install.log" 2>&1 \
        || { tail -n 20 "$LOGS/kafka-install.log" >&2; die "could not resolve Kafka from Maven Central"; }
    fi
  fi
  cat >"$KAFKA_DIR/log4j.properties" <<EOF
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF
}


kafka_up() {
  command -v java >/dev/null || die "a Java runtime 17 or later is required (apt-get install openjdk-17-jre-headless)"
  kafka_install
  local i voters="" sasl_password
  sasl_password="$(kafka_sasl_password)"
  local java=(java -Xms256m -Xmx512m -XX:+UseG1GC "-Dlog4j.configuration=file:$KAFKA_DIR/log4j.properties" -cp "$KAFKA_DIR/lib/*")
  for i in 1 2 3; do voters="$voters${voters:+,}$i@127.0.0.1:$((KAFKA_PORT_BASE + 200 + i))"; done
  [ -f "$DATA/kafka-cluster-id" ] || "${java[@]}" kafka.tools.StorageTool random-uuid >"$DATA/kafka-cluster-id"
  for i in 1 2 3; do
    local conf="$MAS_HOME/kafka-$i.properties" logdir="$DATA/kafka-$i"
    cat >"$conf" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=SSL://127.0.0.1:$(kafka_port "$i"),INTERNAL://127.0.0.1:$((KAFKA_PORT_BASE + 100 + i)),CONTROLLER://127.0.0.1:$((KAFKA_PORT_BASE + 200 + i)),SASL_SSL://127.0.0.1:$((KAFKA_PORT_BASE + 300 + i))
advertised.listeners=SSL://127.0.0.1:$(kafka_port "$i"),INTERNAL://127.0.0.1:$((KAFKA_PORT_BASE + 100 + i)),SASL_SSL://127.0.0.1:$((KAFKA_PORT_BASE + 300 + i))
controller.listener.names=CONTROLLER
inter.broker.listener.name=INTERNAL
listener.security.protocol.map=CONTROLLER:PLAINTEXT,INTERNAL:SSL,SSL:SSL,SASL_SSL:SASL_SSL
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512
listener.name.sasl_ssl.ssl.client.auth=none
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$KAFKA_SASL_USER="$sasl_password";
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$TLS/kafka-broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$TLS/ca.crt
ssl.client.auth=required
ssl.endpoint.identification.algorithm=https
log.dirs=$logdir
num.partitions=3
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
unclean.leader.election.enable=false
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
EOF
    if [ ! -f "$logdir/meta.properties" ]; then
      "${java[@]}" kafka.tools.StorageTool format -c "$conf" -t "$(cat "$DATA/kafka-cluster-id")" >"$LOGS/kafka-format.log" 2>&1 \
        || { cat "$LOGS/kafka-format.log" >&2; die "kafka storage format failed (broker $i)"; }
    fi
    if ! pid_alive "kafka-$i"; then
      port_open "$(kafka_port "$i")" && die "port $(kafka_port "$i") is taken by another process; set MAS_CLUSTER_KAFKA_PORT_BASE"
      $DETACH "${java[@]}" kafka.Kafka "$conf" >>"$LOGS/kafka-$i.log" 2>&1 &
      echo $! >"$RUN/kafka-$i.pid"
    fi
  done
  say "kafka: three brokers, SSL on $(kafka_brokers)"
  for i in 1 2 3; do wait_for "kafka-$i" 120 port_open "$(kafka_port "$i")"; done
  MAS_KAFKA_REPLICATION_FACTOR=3 MAS_KAFKA_MIN_INSYNC_REPLICAS=2 node "$ROOT/scripts/stack/kafka-topics.mjs" >>"$LOGS/kafka-1.log" 2>&1 \
    || { tail -n 20 "$LOGS/kafka-1.log" >&2; die "kafka did not accept the project's topics"; }
  # The SCRAM-SHA-512 credential of the same user (KRaft keeps it in the metadata log), set through
  # the PLAIN login by Kafka's own kafka-configs tool.
  cat >"$MAS_HOME/kafka-sasl-admin.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="$KAFKA_SASL_USER" password="$sasl_password";
ssl.truststore.type=PEM
ssl.truststore.location=$TLS/ca.crt
EOF
  chmod 600 "$MAS_HOME/kafka-sasl-admin.properties"
  "${java[@]}" kafka.admin.ConfigCommand --bootstrap-server "$(kafka_sasl_brokers)" \
    --command-config "$MAS_HOME/kafka-sasl-admin.properties" --alter --entity-type users --entity-name "$KAFKA_SASL_USER" \
    --add-config "SCRAM-SHA-512=[iterations=4096,password=$sasl_password]" >>"$LOGS/kafka-1.log" 2>&1 \
    || { tail -n 20 "$LOGS/kafka-1.log" >&2; die "kafka did not take the SCRAM credential"; }
}

# ---------------------------------------------------------------- the apps

# What every app of the cluster reads: the engines over TLS, verified against the stack's CA.
app_env() {
  export DATABASE_URL="postgres://mas@127.0.0.1:$MAS_PG_PORT/${1:-mas}?$PG_SSL"
  export KAFKA_BROKERS; KAFKA_BROKERS="$(kafka_brokers)"
  export KAFKA_SSL_CA_FILE="$TLS/ca.crt" KAFKA_SSL_CERT_FILE="$TLS/client.crt" KAFKA_SSL_KEY_FILE="$TLS/client.key"
  export TEMPORAL_ADDRESS="127.0.0.1:$MAS_TEMPORAL_PORT" TEMPORAL_TLS_CA_FILE="$TLS/ca.crt"
  export TEMPORAL_TLS_CERT_FILE="$TLS/client.crt" TEMPORAL_TLS_KEY_FILE="$TLS/client.key"
  # The certificate's DNS name: with an IP address as the name, grpc-js 1.14 sets it as the TLS
  # ServerName, and Node prints a DEP0123 warning on every app's stderr (the check itself passes on
  # the certificate's IP address).
  export TEMPORAL_TLS_SERVER_NAME=localhost
  export TEMPORAL_UI_URL="http://127.0.0.1:$MAS_TEMPORAL_UI_PORT"
  export PUBLIC_BASE_URL="http://127.0.0.1:$LB_PORT"
}

# APP-INSTANCE names: api-1 api-2 worker-1 worker-2 worker-long-1 relay-1 relay-2 projector-1 projector-2 console-1
APPS=(api-1 api-2 worker-1 worker-2 worker-long-1 relay-1 relay-2 projector-1 projector-2 console-1)

app_start() {
  local name=$1 app=${1%-*} n=${1##*-}
  pid_alive "$name" && return
  (
    app_env
    # The bulkhead (docs/operations.md): the apis name this queue in every run's input, and
    # worker-long (scripts/app-process.mjs gives it its role) polls it. Set here, not in app_env,
    # whose variables `env` prints for the e2e tests' own apps and task queues.
    export TEMPORAL_LONG_ACTIVITY_TASK_QUEUE="${TEMPORAL_TASK_QUEUE:-mas-agent}-long"
    case "$app" in
      api) export PORT=$((LB_PORT + n)) API_METRICS_PORT=$((METRICS_BASE + 10 * n + 5)) ;;
      worker) export WORKER_METRICS_PORT=$((METRICS_BASE + 10 * n + 1)) TEMPORAL_SDK_METRICS_PORT=$((METRICS_BASE + 10 * n + 4)) ;;
      relay) export RELAY_METRICS_PORT=$((METRICS_BASE + 10 * n + 2)) ;;
      projector) export PROJECTOR_METRICS_PORT=$((METRICS_BASE + 10 * n + 3)) ;;
      console) export CONSOLE_PORT="$CONSOLE_PORT_CLUSTER" CONSOLE_METRICS_PORT=$((METRICS_BASE + 10 * n + 6)) ;;
    esac
    cd "$ROOT"
    # run-apps.mjs restarts the app when it dies (a kill -9 in a drill included).
    $DETACH node scripts/run-apps.mjs "$app" >>"$LOGS/$name.log" 2>&1 &
    echo $! >"$RUN/$name.pid"
  )
}

haproxy_install() {
  command -v haproxy >/dev/null && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing Debian's haproxy"
    apt-get update -qq >/dev/null
    # Debian's package would start its own service (with an empty configuration); the stack runs its own.
    RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >"$LOGS/haproxy-install.log" 2>&1 \
      || { tail -n 20 "$LOGS/haproxy-install.log" >&2; die "apt-get install haproxy failed"; }
  fi
  command -v haproxy >/dev/null || die "HAProxy is required for the apis' load balancer: apt-get install haproxy"
}

# HAProxy's configuration for a load balancer on 127.0.0.1:$1 over the apis on the ports after it:
# the one place it is written (the cluster's own, and the drill's in front of its own apis).
haproxy_config() {
  local lb_port=$1 i=0 port
  cat <<EOF
# Written by scripts/stack/cluster.sh.
global
  log stdout format raw local0 warning
defaults
  mode http
  log global
  timeout connect 2s
  timeout client 10m
  timeout server 10m
  # Streams (server-sent events) stay open for minutes; no buffering of responses.
  option http-no-delay
  # A connection refused by an api that just died is tried again on the other one; a request the
  # dead api had already taken is answered 502 (clients retry it with its Idempotency-Key).
  retries 2
  option redispatch
frontend api
  bind 127.0.0.1:$lb_port
  default_backend apis
backend apis
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter 1s fall 2 rise 2
EOF
  for port in "${@:2}"; do
    i=$((i + 1))
    echo "  server api-$i 127.0.0.1:$port check"
  done
}

lb_up() {
  haproxy_install
  haproxy_config "$LB_PORT" $((LB_PORT + 1)) $((LB_PORT + 2)) >"$MAS_HOME/haproxy.cfg"
  haproxy -c -q -f "$MAS_HOME/haproxy.cfg" || die "haproxy.cfg is invalid"
  if ! pid_alive haproxy; then
    $DETACH haproxy -f "$MAS_HOME/haproxy.cfg" -db >>"$LOGS/haproxy.log" 2>&1 &
    echo $! >"$RUN/haproxy.pid"
  fi
}

apps_up() {
  [ -f "$ROOT/dist/apps/api/src/main.js" ] || (cd "$ROOT" && npm run --silent build)
  (app_env && cd "$ROOT" && node dist/apps/cli/src/main.js migrate >>"$LOGS/migrate.log" 2>&1) \
    || { tail -n 20 "$LOGS/migrate.log" >&2; die "migrations failed"; }
  local name
  for name in "${APPS[@]}"; do app_start "$name"; done
  lb_up
  say "apps: two apis behind HAProxy on 127.0.0.1:$LB_PORT, two workers and a long-activity worker, two relays, two projectors, console on $CONSOLE_PORT_CLUSTER"
  wait_for api-1 120 curl -fsS "http://127.0.0.1:$((LB_PORT + 1))/readyz"
  wait_for api-2 60 curl -fsS "http://127.0.0.1:$((LB_PORT + 2))/readyz"
  wait_for haproxy 30 curl -fsS "http://127.0.0.1:$LB_PORT/readyz"
}

# ---------------------------------------------------------------- commands

status() {
  local name
  for name in "${APPS[@]}" haproxy temporal-frontend temporal-history temporal-matching temporal-worker temporal-ui kafka-1 kafka-2 kafka-3; do
    if pid_alive "$name"; then echo "$name: up (pid $(cat "$RUN/$name.pid"))"; else echo "$name: down"; fi
  done
  if pg_tool psql -d postgres -Atc 'select 1' >/dev/null 2>&1; then echo "postgres: up 127.0.0.1:$MAS_PG_PORT (TLS)"; else echo "postgres: down"; fi
  if temporal_healthy; then echo "temporal: SERVING 127.0.0.1:$MAS_TEMPORAL_PORT (mTLS), UI http://127.0.0.1:$MAS_TEMPORAL_UI_PORT"; else echo "temporal: not serving"; fi
  if curl -fsS "http://127.0.0.1:$LB_PORT/readyz" >/dev/null 2>&1; then echo "api: ready behind http://127.0.0.1:$LB_PORT"; else echo "api: not ready"; fi
}

# The variables a client of the cluster needs (the apps', the e2e suite's), for `eval`/`source`.
print_env() {
  app_env "${1:-mas}"
  local name
  for name in DATABASE_URL KAFKA_BROKERS KAFKA_SSL_CA_FILE KAFKA_SSL_CERT_FILE KAFKA_SSL_KEY_FILE TEMPORAL_ADDRESS TEMPORAL_NAMESPACE \
    TEMPORAL_TLS_CA_FILE TEMPORAL_TLS_CERT_FILE TEMPORAL_TLS_KEY_FILE TEMPORAL_TLS_SERVER_NAME TEMPORAL_UI_URL \
    MAS_MASTER_KEY MAS_API_KEY_PEPPER MAS_PAYLOAD_KEYS MAS_CODEC_TOKEN; do
    printf "export %s='%s'\n" "$name" "${!name}"
  done
  printf "export MAS_CLUSTER_API_URL='http://127.0.0.1:%s'\n" "$LB_PORT"
}

# print_env, with Kafka reached over its SASL_SSL listeners by user name and password (mechanism
# $2: plain or scram-sha-512) instead of a client certificate.
print_sasl_env() {
  print_env "${1:-mas}"
  printf "export KAFKA_BROKERS='%s' KAFKA_SASL_MECHANISM='%s' KAFKA_SASL_USERNAME='%s' KAFKA_SASL_PASSWORD='%s'\n" \
    "$(kafka_sasl_brokers)" "${2:-scram-sha-512}" "$KAFKA_SASL_USER" "$(kafka_sasl_password)"
  echo "unset KAFKA_SSL_CERT_FILE KAFKA_SSL_KEY_FILE"
}

# Each group stopped in parallel (the apps drain for up to 30 s each; three brokers stopped one
# after another wait for a quorum that the last one no longer has), the apps before the engines.
down() {
  local group name
  for group in "haproxy ${APPS[*]}" "temporal-ui temporal-worker temporal-frontend temporal-matching temporal-history" "kafka-1 kafka-2 kafka-3"; do
    for name in $group; do stop_pid "$name" & done
    wait
  done
  postgres_down
}

# Every command below talks to the cluster's engines, never the default stack's (whose addresses
# env.sh exported above).
app_env

case "${1:-}" in
  up)
    started=$SECONDS
    tls_up
    # `up postgres|kafka|temporal|apps`: that part alone (what it needs must be up).
    for part in ${2:-postgres kafka temporal apps}; do "${part}_up"; done
    say "up in $((SECONDS - started))s"
    status >&2
    ;;
  down) down; say "down" ;;
  status) status ;;
  env) print_env "${2:-mas}" ;;
  env-sasl) print_sasl_env "${2:-mas}" "${3:-scram-sha-512}" ;; # <database> <plain|scram-sha-512>
  haproxy-config) haproxy_config "${@:2}" ;; # <lb port> <api port>...: the load balancer's configuration
  can-run) # whether this machine can run the profile; if not, what it lacks (and exit status 1)
    missing=()
    command -v go >/dev/null || missing+=("Go 1.25 or later")
    command -v openssl >/dev/null || missing+=("openssl")
    command -v haproxy >/dev/null || { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; } \
      || missing+=("HAProxy (apt-get install haproxy)")
    [ ${#missing[@]} = 0 ] || { echo "it lacks ${missing[*]}"; exit 1; }
    ;;
  fresh-test-database) pg_tool psql -q -d postgres -c "drop database if exists mas_test with (force)" -c "create database mas_test" ;;
  psql) pg_tool psql "${@:2}" ;;
  logs) if [ -n "${2:-}" ]; then tail -n 100 -f "$LOGS/$2.log"; else ls "$LOGS"; fi ;;
  kill) # kill -9 of one process, for drills: kafka-N, temporal-SERVICE, or an app's supervisor's child
    [ -n "${2:-}" ] || die "usage: kill NAME"
    pid_alive "$2" || die "$2 is not running"
    case "$2" in
      api-*|worker-*|relay-*|projector-*|console-*) pkill -9 -P "$(cat "$RUN/$2.pid")" ;;
      *) kill -9 "$(cat "$RUN/$2.pid")"; rm -f "$RUN/$2.pid" ;;
    esac
    say "killed $2 (kill -9)"
    ;;
  kafka-controller) # the node id of the active KRaft controller: the newest epoch's leader in the nodes' quorum-state
    for i in 1 2 3; do
      sed -nE 's/.*"leaderId":(-?[0-9]+),"leaderEpoch":([0-9]+).*/\2 \1/p' "$DATA/kafka-$i/__cluster_metadata-0/quorum-state" 2>/dev/null || true
      echo # the file has no final newline
    done | sort -n | tail -n 1 | cut -d' ' -f2
    ;;
  start) # start what is not running (after a kill)
    tls_up; postgres_up; kafka_up; temporal_up; apps_up ;;
  *)
    echo "usage: npm run stack -- up|down|status|env|logs [NAME]|kill NAME|start --profile cluster" >&2
    exit 2
    ;;
esac
