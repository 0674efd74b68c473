#!/usr/bin/env bash
# Records the PGO profile the CMake build and scripts/bench.sh compile the library with
# (pgo/rocprof-trace-decoder.profdata; README, Performance): an instrumented build runs
# examples/pgo_train.rs over the training examples below, and the counts of this crate's
# functions are kept. Run it again after changing the decoder: functions whose code changed lose
# their counts (the build warns "function control flow change detected").
#
# The training examples are the corpus's second runs (`*_run_1*`) and two of the gfx950 aiter
# captures; the first runs and the other captures are held out, so that the README's figures for
# them measure the profile on traces it was not recorded from.
#
# usage: scripts/pgo.sh [OUT]  (OUT: default pgo/rocprof-trace-decoder.profdata; RTD_SHARED: the
#        shared folder, default ../shared; LLVM_PROFDATA: the llvm-profdata to merge with, default
#        llvm-profdata-19 or llvm-profdata)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
corpus="${RTD_SHARED:-$root/../shared}/corpus"
out="${1:-$root/pgo/rocprof-trace-decoder.profdata}"
profdata="${LLVM_PROFDATA:-$(command -v llvm-profdata-19 || command -v llvm-profdata || true)}"
if [ -z "$profdata" ]; then
    echo "llvm-profdata not found (apt-get install llvm-19, or set LLVM_PROFDATA)" >&2
    exit 1
fi
training=(
    gfx1100/profile_empty_run_1 gfx1100/profile_gemm_run_1 gfx1100/profile_plus_run_1
    gfx1100/profile_sync_run_1_k0 gfx1100/profile_sync_run_1_k1
    gfx1200/profile_empty_run_1 gfx1200/profile_gemm_run_1 gfx1200/profile_ops_run_1
    gfx1200/profile_plus_run_1 gfx1200/profile_sync_run_1_k0 gfx1200/profile_sync_run_1_k1
    gfx950/profile_empty_run_1 gfx950/profile_gemm_run_1 gfx950/profile_plus_run_1
    gfx950/aiter_skinny_M128_att_hack1
    gfx950/aiter_study_aggregate_load_AL_BM32_BN64_BK512_nS3_nW4_att_orig
)
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
source "$root/scripts/host-rustflags.sh"
env "$host_rustflags_var=-Cprofile-generate=$raw" \
    cargo build --release --quiet --example pgo_train --target-dir "$root/target/pgo-generate"
LLVM_PROFILE_FILE="$raw/train-%p.profraw" \
    "$root/target/pgo-generate/release/examples/pgo_train" "$corpus" "${training[@]}"
mkdir -p "$(dirname "$out")"
"$profdata" merge --sparse --function=rocprof_trace_decoder -o "$out" "$raw"/train-*.profraw
echo "wrote $out ($(stat -c %s "$out") bytes)"
