#!/usr/bin/env bash
# Makes sure a C compiler, cmake and libclang (llama.cpp for the embedded model is built
# with them) and a recent Rust toolchain exist (rustup when cargo is absent).
# Source it: it may add ~/.cargo/bin to PATH.
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1 ||
  ! command -v curl >/dev/null 2>&1 || ! command -v cmake >/dev/null 2>&1 ||
  ! ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1; then
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    build-essential curl ca-certificates cmake libclang-dev
fi
if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
if ! command -v cargo >/dev/null 2>&1; then
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c rustfmt,clippy
  . "$HOME/.cargo/env"
fi
