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
# cargo fmt does not reach the modules src/lib.rs declares through its macro: every file is checked.
find src tests examples fuzz/fuzz_targets -name '*.rs' -print0 | xargs -0 rustfmt --edition 2021 --check
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

step "golden checks (every corpus example; tests/known_differences.txt lists the cases still known to differ)"
# Each check fails on a case that differs and is not listed, and on a listed case that matches.
for check in real vnop single damaged; do
    python3 tests/known_differences.py "$check" --lib "$lib" --shared "$shared"
done

# The same goldens and damaged streams decoded by the build with debug assertions: every record
# handed to the trace callback is checked against the ABI's ranges (src/sink/check.rs), and a
# violation panics, which the boundary turns into an error status that fails the comparison.
checked="$root/target/checked/librocprof_trace_decoder.so"
echo "--- record checks over every golden and damaged decode ($checked)"
for check in real vnop single damaged; do
    python3 tests/known_differences.py "$check" --lib "$checked" --shared "$shared"
done

step "built-in disassembly (Mode 1) golden checks: every example with its code objects"
# The back-end is the library's own choice (README, "Disassembly back-ends"): COMGR for the
# processors it knows, else the newest libLLVM; only LLVM 22 knows gfx950.
python3 tests/known_differences.py mode1 --lib "$lib" --shared "$shared"
echo "--- the same with the built-in tables forced (ROCPROF_TRACE_DECODER_DISASM=builtin)"
ROCPROF_TRACE_DECODER_DISASM=builtin python3 tests/known_differences.py mode1 --lib "$lib" --shared "$shared"

step "built-in disassembler tables (scripts/gen_isa_tables.py --check)"
python3 scripts/gen_isa_tables.py --check
echo "--- the opcodes past LLVM (scripts/gen_isa_extra.py --check, from tinygrad's ISA opcode lists)"
python3 scripts/gen_isa_extra.py --check

step "mnemonic lists of the classifier table test (scripts/gen_mnemonics.py --check)"
python3 scripts/gen_mnemonics.py --check

step "Python package (pytest over the installed package and the built library)"
# Includes test_builtin_disassembly.py: code metadata and rocprof-att with no llvm-objdump and no
# ROCm on PATH (the library's built-in disassembly), checked against llvm-objdump's rows.
ROCPROF_TRACE_DECODER_LIB="$lib" RTD_CORPUS="$shared/corpus" python3 -m pytest -q python/tests

step "fuzz targets, briefly (scripts/fuzz.sh; RTD_FUZZ_SECONDS sets the total budget)"
bash scripts/fuzz.sh "${RTD_FUZZ_SECONDS:-60}"

echo
echo "all test steps passed"
