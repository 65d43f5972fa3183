#!/usr/bin/env bash
# Runs every fuzz target of tests/fuzz (libFuzzer, ASan + UBSan) for a time budget each and prints the
# executions and findings per target (the numbers docs/reliability.md records). Builds BUILD_DIR first
# (as tools/sanitize.sh configures it). A finding leaves its input as crash-* / leak-* / timeout-* in
# BUILD_DIR/tests/fuzz/findings/TARGET; rerun it with: BUILD_DIR/tests/fuzz/fuzz_TARGET FILE.
# Usage: tools/fuzz.sh [SECONDS_PER_TARGET] [BUILD_DIR] [TARGET...]   (default 60 s, build-asan, all targets)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
build="${2:-$root/build-asan}"
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(scenario profile measurement nccl_log hf_config safetensors layout routing trace)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DTPSIM_REAL=OFF \
  -DTPSIM_BUILD_BENCH=OFF -DTPSIM_FUZZ=ON >/dev/null
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null
# Seed folders per target, as tests/fuzz/CMakeLists.txt lists them.
declare -A seeds=(
  [scenario]="$root/scenarios $root/scenarios/forward $root/scenarios/train $root/scenarios/pipeline $root/scenarios/inference $root/scenarios/moe $root/scenarios/published $root/docs/examples"
  [profile]="$root/scenarios/presets/profiles"
  [measurement]="$root/calibrate/data/measurements"
  [nccl_log]="$root/tests/fuzz/seeds/nccl_log"
  [hf_config]="$root/scenarios/presets/models $root/tests/model/hf_configs"
  [safetensors]="$root/tests/fuzz/seeds/safetensors"
  [layout]="$root/tests/fuzz/seeds/layout"
  [routing]="$root/tests/fuzz/seeds/routing"
  [trace]="$root/tests/fuzz/seeds/trace"
)
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$root/tools/lsan.supp:print_suppressions=0"
status=0
printf '%-12s %10s %14s %10s %s\n' target seconds executions corpus findings
for t in "${targets[@]}"; do
  corpus="$build/tests/fuzz/corpus/$t"
  findings="$build/tests/fuzz/findings/$t"
  mkdir -p "$corpus" "$findings"
  log="$findings/last_run.log"
  # shellcheck disable=SC2086
  if ! (cd "$findings" && "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
        -print_final_stats=1 "$corpus" ${seeds[$t]}) >"$log" 2>&1; then
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  count=$(find "$corpus" -type f | wc -l)
  found=$(find "$findings" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  printf '%-12s %10s %14s %10s %s\n' "$t" "$seconds" "$runs" "$count" "$found"
done
exit "$status"
