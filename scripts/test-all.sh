#!/usr/bin/env bash
# Runs every test: Rust unit/integration tests, lints, header and ABI checks, the C suite against
# the installed library, a CMake consumer, and the golden comparisons against ../shared/corpus.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
shared="${RTD_SHARED:-$root/../shared}"
build="$root/build"
prefix="$build/install"

step() { printf '\n=== %s\n' "$*"; }

step "cargo fmt / clippy"
cargo fmt --check
cargo clippy --release --all-targets -- -D warnings

step "API documentation and packaging (cargo doc without warnings, cargo package)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps
cargo package --allow-dirty --quiet

step "cargo test (profile checked: release code with debug assertions, so every record is checked)"
cargo test --profile checked
cargo build --profile checked   # target/checked/librocprof_trace_decoder.so, for the golden step

step "CMake build and install"
cmake -S . -B "$build/cmake" -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_PYTHON=ON \
    -DRTD_CARGO_TARGET_DIR="$root/target" >/dev/null
cmake --build "$build/cmake"
cmake --install "$build/cmake" >/dev/null
lib="$prefix/lib/librocprof-trace-decoder.so.0.3.0"

step "ABI checks"
"$shared/tools/abi_check/abi_check.sh" "$prefix/include/rocprof-trace-decoder"
"$shared/tools/abi_check/exports_check.sh" "$lib" | tail -n 1

step "C API suite"
gcc -std=gnu11 -Wall -Wextra -Werror -I "$prefix/include/rocprof-trace-decoder" tests/c/api_test.c \
    -o "$build/api_test" -L "$prefix/lib" -lrocprof-trace-decoder -Wl,-rpath,"$prefix/lib"
"$build/api_test"
# The A/B timing tool of CONTRIBUTING.md and docs/PERFORMANCE.md, so that it keeps building and running.
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -I "$prefix/include/rocprof-trace-decoder" \
    scripts/ab_bench.c -o "$build/ab_bench" -ldl
"$build/ab_bench" "$shared/corpus/gfx1100/profile_empty_run_0" "$lib"

step "valgrind: C suite and handle life cycles (no errors, no leaks)"
bash scripts/valgrind.sh "$prefix"

step "CMake consumer (find_package)"
cmake -S tests/cmake_consumer -B "$build/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build/consumer" >/dev/null
"$build/consumer/consumer"

step "golden checks"
for suite in $(cat tests/golden_suites.txt | grep -v '^#'); do
    only="${suite%%:*}"; variant="${suite##*:}"
    echo "--- --only $only --variant $variant"
    python3 "$shared/tools/golden_check.py" --lib "$lib" --only "$only" --variant "$variant" | tail -n 1
done

# Truncated and zeroed SE streams against the reference's output on them (V1 and V2): fails on
# any case that differs and is not in tests/damage_known_differences.txt, or is listed and matches.
echo "--- damage_check"
python3 tests/damage_known.py --lib "$lib" --shared "$shared"

# The same goldens and damaged streams decoded by the build with debug assertions: every record
# handed to the trace callback is checked against the ABI's ranges (src/sink/check.rs), and a
# violation panics, which the boundary turns into an error status that fails the comparison.
checked="$root/target/checked/librocprof_trace_decoder.so"
echo "--- record checks over every golden and damaged decode ($checked)"
python3 "$shared/tools/golden_check.py" --lib "$checked" | tail -n 1
python3 "$shared/tools/golden_check.py" --lib "$checked" --variant vnop | tail -n 1
python3 tests/damage_known.py --lib "$checked" --shared "$shared"

step "built-in disassembly (Mode 1) golden checks"
for only in $(cat tests/mode1_suites.txt | grep -v '^#'); do
    echo "--- --only $only"
    python3 tests/mode1_golden.py --lib "$lib" --only "$only" | tail -n 1
    echo "--- --only $only, built-in tables (ROCPROF_TRACE_DECODER_DISASM=builtin)"
    ROCPROF_TRACE_DECODER_DISASM=builtin python3 tests/mode1_golden.py --lib "$lib" --only "$only" | tail -n 1
done

step "built-in disassembler tables (scripts/gen_isa_tables.py --check)"
python3 scripts/gen_isa_tables.py --check

step "mnemonic lists of the classifier table test (scripts/gen_mnemonics.py --check)"
python3 scripts/gen_mnemonics.py --check

step "Python package (pytest over the installed package and the built library)"
ROCPROF_TRACE_DECODER_LIB="$lib" RTD_CORPUS="$shared/corpus" python3 -m pytest -q python/tests

step "fuzz targets, briefly (scripts/fuzz.sh; RTD_FUZZ_SECONDS sets the total budget)"
bash scripts/fuzz.sh "${RTD_FUZZ_SECONDS:-60}"

echo
echo "all test steps passed"
