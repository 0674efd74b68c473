#!/usr/bin/env bash
# The benchmark of docs/PERFORMANCE.md (examples/bench.rs), built as `cargo build --release`
# builds the library (RTD_PGO=ON: with the PGO profile of pgo/ on x86-64, as `cmake -DRTD_PGO=ON`). Arguments go to the
# bench, e.g. `scripts/bench.sh --seconds 2 --markdown`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source "$root/scripts/host-rustflags.sh"
profile="$root/pgo/rocprof-trace-decoder.profdata"
target_dir="$root/target"
if [ "${RTD_PGO:-OFF}" = ON ] && [[ "$host_triple" == x86_64-* ]] && [ -f "$profile" ]; then
    export "$host_rustflags_var=-Cprofile-use=$profile"
    target_dir="$root/target/pgo"
fi
exec cargo run --release --quiet --example bench --target-dir "$target_dir" -- "$@"
