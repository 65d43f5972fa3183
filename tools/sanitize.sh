#!/usr/bin/env bash
# Builds tpsim with AddressSanitizer + UndefinedBehaviorSanitizer (clang, TPSIM_FUZZ: the fuzz targets link
# libFuzzer and their tests fuzz for a few seconds each) and runs the whole test suite under them.
# Usage: tools/sanitize.sh [BUILD_DIR]   (default build-asan; JOBS=N to set the parallelism)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-asan}"
jobs="${JOBS:-$(nproc)}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DTPSIM_REAL=OFF \
  -DTPSIM_BUILD_BENCH=OFF -DTPSIM_FUZZ=ON
cmake --build "$build" -j "$jobs"
# Any report fails its test: UBSan aborts (-fno-sanitize-recover), ASan exits non-zero; leaks are reported.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/tools/lsan.supp:print_suppressions=0"
cd "$build"
ctest -j "$jobs" --output-on-failure
