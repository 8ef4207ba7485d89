#!/usr/bin/env bash
# The tools the tests use beyond PostgreSQL and NATS, installed with apt-get when absent:
#   promtool (Debian `prometheus`): tests/metrics.rs checks /metrics and deploy/prometheus.yml;
#   chromium + chromium-driver (+ a CJK font): tests/console.rs drives the web console in
#   headless Chromium over WebDriver; cargo-nextest (from crates.io when absent) runs the
#   suite. Safe to run again and again.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
[ -d /usr/share/fonts/opentype/noto ] || missing+=(fonts-noto-cjk)
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install --locked cargo-nextest
fi
echo "test-tools.sh: promtool, chromium, chromedriver and cargo-nextest are installed"
