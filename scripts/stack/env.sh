# Sourced by scripts/*.sh: where the local stack lives, its ports, and the variables the apps read.
# Every value can be overridden from the environment; the defaults are listed in docs/stack.md.

# shellcheck source=../node-path.sh
. "$(dirname "${BASH_SOURCE[0]}")/../node-path.sh"

MAS_HOME="${MAS_HOME:-$HOME/.cache/managed-agent-service}"
MAS_PG_PORT="${MAS_PG_PORT:-55432}"
MAS_KAFKA_PORT="${MAS_KAFKA_PORT:-19092}"
MAS_KAFKA_CONTROLLER_PORT="${MAS_KAFKA_CONTROLLER_PORT:-19093}"
MAS_TEMPORAL_PORT="${MAS_TEMPORAL_PORT:-7233}"
MAS_TEMPORAL_UI_PORT="${MAS_TEMPORAL_UI_PORT:-8233}"
MAS_KAFKA_VERSION=3.9.1
MAS_TEMPORAL_CLI_VERSION=1.5.1

# PostgreSQL refuses to run as root; as root the cluster runs as the `postgres` user, whose home
# is readable to it (root's home is not).
if [ "$(id -u)" = 0 ]; then
  MAS_PG_DATA="${MAS_PG_DATA:-/var/lib/postgresql/managed-agent-service/$MAS_PG_PORT}"
else
  MAS_PG_DATA="${MAS_PG_DATA:-$MAS_HOME/data/postgres}"
fi

# Set when the caller brings its own PostgreSQL; the stack then leaves PostgreSQL alone.
MAS_EXTERNAL_DATABASE="${DATABASE_URL:+1}"

export DATABASE_URL="${DATABASE_URL:-postgres://mas@127.0.0.1:$MAS_PG_PORT/mas}"
export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:$MAS_KAFKA_PORT}"
export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:$MAS_TEMPORAL_PORT}"
export TEMPORAL_NAMESPACE="${TEMPORAL_NAMESPACE:-default}"
export TEMPORAL_UI_URL="${TEMPORAL_UI_URL:-http://127.0.0.1:$MAS_TEMPORAL_UI_PORT}"
export PORT="${PORT:-3000}"
# A model server on this machine (Ollama, vLLM, llama.cpp; the bench's, the drills' and the replay
# recorder's scripted ones) may be a project's base URL on the local stack; elsewhere loopback and
# private addresses are refused unless MODEL_ALLOW_HOSTS names them (docs/models.md). Set it empty
# to see the refusal.
export MODEL_ALLOW_HOSTS="${MODEL_ALLOW_HOSTS-127.0.0.1,::1,localhost}"

# Local secrets: generated once per machine, kept outside the repository, readable by the owner only.
# A variable set in the environment wins; one missing from an older secrets.env is added to it.
mas_secret() {
  local name=$1 generate=$2 value
  value="${!name:-}"
  if [ -z "$value" ]; then
    if [ ! -f "$MAS_HOME/secrets.env" ]; then
      mkdir -p "$MAS_HOME"
      (umask 077 && : >"$MAS_HOME/secrets.env")
    fi
    value="$(sed -n "s/^$name=//p" "$MAS_HOME/secrets.env" | tail -n 1)"
    if [ -z "$value" ] && [ -n "$generate" ]; then
      value="$($generate)"
      echo "$name=$value" >>"$MAS_HOME/secrets.env"
    fi
    [ -z "$value" ] && return 0
    printf -v "$name" '%s' "$value"
  fi
  export "${name?}"
}
mas_random_key() { head -c 32 /dev/urandom | base64; }
# Temporal payload keys: id:key pairs; the id travels with every payload, so a new key can be
# added (and made current with MAS_PAYLOAD_KEY_CURRENT) without losing older histories.
mas_payload_keys() { echo "k$(date -u +%Y%m%d):$(mas_random_key)"; }
# The codec endpoint's operator token, URL-safe (the Temporal UI carries it in the endpoint's path).
mas_codec_token() { head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '='; }
mas_secret MAS_MASTER_KEY mas_random_key
mas_secret MAS_API_KEY_PEPPER mas_random_key
mas_secret MAS_PAYLOAD_KEYS mas_payload_keys
mas_secret MAS_PAYLOAD_KEY_CURRENT ''   # set by hand when a second key is added (docs/operations.md)
mas_secret MAS_CODEC_TOKEN mas_codec_token
