#!/usr/bin/env bash
# The test command: starts what the tests need, then runs every test of the workspace
# against the real PostgreSQL and NATS.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/toolchain.sh
bash deploy/services.sh
cargo test --workspace "$@"
