#!/usr/bin/env bash
# Runs Ghost on this machine: starts PostgreSQL and NATS when absent, migrates, and runs
# every service in one process (`ghost up`). Talks to Ollama at http://127.0.0.1:11434
# unless GHOST_LLM__PERSONA__BASE_URL says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/toolchain.sh
bash deploy/services.sh

mkdir -p .ghost-data
if [ -z "${GHOST_API_TOKEN:-}" ]; then
  if [ ! -s .ghost-data/api_token ]; then
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > .ghost-data/api_token
  fi
  GHOST_API_TOKEN=$(cat .ghost-data/api_token)
  export GHOST_API_TOKEN
fi
export GHOST_DATABASE__URL="${GHOST_DATABASE__URL:-postgres://ghost:ghost@127.0.0.1:5432/ghost}"

cargo build --release --bin ghost
listen=$(grep -A3 '^gateway:' config/ghost.yaml | sed -n 's/^ *listen: *//p')
cat <<MSG
Ghost is starting. Try:
  curl -N -H "Authorization: Bearer $GHOST_API_TOKEN" -H 'content-type: application/json' \\
       -d '{"session_id":"demo","text":"hello"}' http://${GHOST_GATEWAY__LISTEN:-$listen}/api/chat
  curl http://${GHOST_GATEWAY__LISTEN:-$listen}/healthz
(the bearer token is kept in .ghost-data/api_token)
MSG
exec ./target/release/ghost up
