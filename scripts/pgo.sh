#!/usr/bin/env bash
# Records the PGO profile that `cmake -DRTD_PGO=ON` and `RTD_PGO=ON scripts/bench.sh` compile the
# library with (pgo/rocprof-trace-decoder.profdata; docs/PERFORMANCE.md): an instrumented build runs
# examples/pgo_train.rs over the training examples below, and the counts of this crate's
# functions are kept. Run it again after changing the decoder, and commit pgo/ with the change:
# functions whose code changed lose their counts (the PGO build warns "function control flow
# change detected"), and `--check` fails.
#
# The training examples are the corpus's second runs (`*_run_1*`) and two of the gfx950 aiter
# captures; the first runs and the other captures are held out, so that the figures for
# them measure the profile on traces it was not recorded from.
#
# usage: scripts/pgo.sh [--check]
#   Without --check it writes pgo/rocprof-trace-decoder.profdata. With --check it records a profile
#   afresh and fails unless the committed one holds the same functions with the same code (the
#   recording is deterministic in that: only the counts vary).
#   RTD_SHARED: the shared folder (default ../shared); LLVM_PROFDATA: the llvm-profdata to use
#   (default llvm-profdata-19, else llvm-profdata).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
corpus="${RTD_SHARED:-$root/../shared}/corpus"
committed="$root/pgo/rocprof-trace-decoder.profdata"
check=0
if [ "${1:-}" = --check ]; then
    check=1
fi
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
out="$committed"
if [ "$check" = 1 ]; then
    out="$raw/fresh.profdata"
fi
source "$root/scripts/host-rustflags.sh"
env "$host_rustflags_var=-Cprofile-generate=$raw" \
    cargo build --release --quiet --example pgo_train --target-dir "$root/target/pgo-generate"
LLVM_PROFILE_FILE="$raw/train-%p.profraw" \
    "$root/target/pgo-generate/release/examples/pgo_train" "$corpus" "${training[@]}"
mkdir -p "$(dirname "$out")"
"$profdata" merge --sparse --function=rocprof_trace_decoder -o "$out" "$raw"/train-*.profraw
if [ "$check" = 0 ]; then
    echo "wrote $out ($(stat -c %s "$out") bytes)"
    exit 0
fi
# Each function of a profile with the hash of its control flow.
functions() {
    "$profdata" show --all-functions --text "$1" |
        awk '/^# Func Hash:/ { getline; print name, $0; next } /^[^#:]/ && NF == 1 { name = $0 }' | sort
}
functions "$committed" >"$raw/committed.functions"
functions "$out" >"$raw/fresh.functions"
if ! diff "$raw/committed.functions" "$raw/fresh.functions" >"$raw/stale"; then
    echo "pgo/rocprof-trace-decoder.profdata is stale: run scripts/pgo.sh and commit pgo/" >&2
    echo "(< committed, > the code now)" >&2
    head -n 20 "$raw/stale" >&2
    exit 1
fi
echo "the committed profile holds the same $(wc -l <"$raw/fresh.functions") functions, with the same code"
