#!/usr/bin/env bash
# Builds the cargo-fuzz targets (fuzz/) and runs each briefly: scripts/fuzz.sh [total seconds]
# (default 60, split evenly across the targets). Needs cargo-fuzz (`cargo install cargo-fuzz
# --locked`); the stable toolchain builds the sanitizer flags with RUSTC_BOOTSTRAP=1.
# Seeds are synthesized and cut from ../shared/corpus at run time into fuzz/corpus/ (ignored by
# git). A crash fails the script and leaves its input in fuzz/artifacts/<target>/; turn each into
# a regression test under tests/ before fixing it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
shared="${RTD_SHARED:-$root/../shared}"
budget="${1:-60}"
targets=(parse parse_data codeobj scan pma)
export RUSTC_BOOTSTRAP=1
cd "$root/fuzz"
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
    exit 1
fi

cargo fuzz build -O >/dev/null 2>&1 || cargo fuzz build -O

# seed <target> <name> <control bytes as printf escapes> [file to append, first N bytes]
seed() {
    local dir="corpus/$1"
    mkdir -p "$dir"
    printf "$3" >"$dir/$2"
    if [[ $# -ge 5 && -f "$4" ]]; then
        head -c "$5" "$4" >>"$dir/$2"
    fi
}

# Synthesized streams: every architecture header (selectors 1..8) before a few token bytes.
for selector in 1 2 3 4 5 6 7 8; do
    seed parse "header$selector" "\\x0$selector\\x01\\x80\\x00\\x11\\x22\\x33\\x44\\x55\\x66\\x77\\x88"
    seed parse_data "header$selector" "\\x0$selector\\x01\\x05\\x00\\x11\\x22\\x33\\x44\\x55\\x66\\x77\\x88"
    seed scan "header$selector" "\\x0$selector\\x80\\x00\\xff\\xff\\x00\\x11\\x22\\x33\\x44\\x55\\x66\\x77\\x88"
done
# Cuts of real traces (selector 0: the input carries its own header).
corpus="$shared/corpus"
if [[ -d "$corpus" ]]; then
    n=0
    for trace in "$corpus"/gfx1100/profile_gemm_run_0/se0.att "$corpus"/gfx1200/profile_ops_run_0/se1.att \
        "$corpus"/gfx1200/profile_gemm_run_0/se0.att "$corpus"/gfx950/profile_gemm_run_0/se0.att \
        "$corpus"/gfx950/aiter_skinny_M128_att_hack0/se0.att; do
        n=$((n + 1))
        seed parse "corpus$n" '\x00\x01\x80' "$trace" 16384
        seed parse_data "corpus$n" '\x00\x00\x07' "$trace" 16384
        seed scan "corpus$n" '\x00\x80\x10\xf0\xff' "$trace" 16384
    done
    n=0
    for elf in "$corpus"/gfx1100/profile_gemm_run_0/code_object_0.elf "$corpus"/gfx1200/profile_gemm_run_0/code_object_0.elf \
        "$corpus"/gfx950/aiter_skinny_M128_att_hack0/code_object_0.elf; do
        n=$((n + 1))
        seed codeobj "elf$n" '\x01' "$elf" 65536
    done
fi
mkdir -p corpus/pma

per_target=$((budget / ${#targets[@]}))
((per_target >= 1)) || per_target=1
for target in "${targets[@]}"; do
    echo "--- fuzz $target (${per_target}s)"
    log="artifacts/$target.log"
    mkdir -p artifacts
    status=0
    cargo fuzz run -O "$target" "corpus/$target" -- \
        -max_total_time="$per_target" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" || true
    if ((status != 0)); then
        grep -E -A30 'ERROR|panicked' "$log" | head -n 60 >&2
        echo "fuzz $target failed: crash input in fuzz/artifacts/$target/, log $log" >&2
        exit 1
    fi
done
echo "fuzz: no crashes"
