#!/usr/bin/env bash
# Builds and installs the library into ./build/install, then decodes a trace from the shared corpus
# (or a built-in synthetic gfx9 trace when the corpus is absent) and prints a summary of the records.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if ! command -v cmake >/dev/null; then
    apt-get update -qq && apt-get install -y -qq cmake >/dev/null
fi
cmake -S . -B build/cmake -DCMAKE_INSTALL_PREFIX="$root/build/install" -DRTD_CARGO_TARGET_DIR="$root/target" >/dev/null
cmake --build build/cmake
cmake --install build/cmake >/dev/null
cargo run --release --quiet --example decode -- "${1:-$root/../shared/corpus/gfx1200/profile_plus_run_0}"
