#!/usr/bin/env bash
# Runs the C API suite and the handle life-cycle program (tests/c/) under valgrind: any memory
# error or definite/indirect leak fails. Usage: scripts/valgrind.sh [install prefix]
# (default build/install, as scripts/test-all.sh installs it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${RTD_SHARED:-$root/../shared}"
prefix="${1:-$root/build/install}"
out="$root/build/valgrind"
mkdir -p "$out"
compile() {
    gcc -std=gnu11 -g -O1 -Wall -Wextra -Werror -I "$prefix/include/rocprof-trace-decoder" "$root/tests/c/$1.c" \
        -o "$out/$1" -L "$prefix/lib" -lrocprof-trace-decoder -Wl,-rpath,"$prefix/lib"
}
compile api_test
compile lifecycle
check() {
    valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect \
        --suppressions="$root/tests/c/valgrind.supp" \
        --show-leak-kinds=definite,indirect "$@"
}
check "$out/api_test"
corpus="$shared/corpus"
check "$out/lifecycle" "$corpus/gfx1100/profile_gemm_run_0/code_object_0.elf" \
    "$corpus/gfx1100/profile_gemm_run_0/se0.att" "$corpus/gfx1200/profile_ops_run_0/se1.att" \
    "$corpus/gfx950/profile_gemm_run_0/se0.att" \
    "$corpus/gfx950/aiter_study_aggregate_load_AL_BM32_BN128_BK512_nS2_nW4_att_orig/se0.att"
echo "valgrind: no errors, no leaks"
