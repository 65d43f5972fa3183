#!/usr/bin/env bash
# One-command set-up on a fresh Debian machine: installs the packages a mode needs, builds, then
#   quickstart  builds the tpsim binary alone and runs the quickstart scenario (the default)
#   test        builds everything (tests, benchmarks, tools) and runs every test with CTest (what CI runs)
# Usage: tools/setup.sh [quickstart|test]   (as root, or with sudo available)
set -euo pipefail

mode="${1:-quickstart}"
case "$mode" in
  quickstart|test) ;;
  *) echo "usage: $0 [quickstart|test]" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TPSIM_BUILD_DIR:-$root/build}"

# What the tpsim binary builds from, and python3-matplotlib for `tpsim plot`.
packages=(
  g++ cmake make pkg-config
  libsimgrid-dev libyaml-cpp-dev libboost-graph-dev nlohmann-json3-dev libcli11-dev libeigen3-dev
  python3 python3-matplotlib
)
# The tests and benchmarks; tools/fuzz.sh and tools/sanitize.sh need clang's libFuzzer, ASan and UBSan runtimes.
test_packages=(catch2 libbenchmark-dev clang libclang-rt-dev)
if [ "$mode" = test ]; then packages+=("${test_packages[@]}"); fi

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

jobs="$(nproc)"
echo "== building in $build"
if [ "$mode" = quickstart ]; then
  # The binary alone: the tests and benchmarks are most of a full build's time. A build folder configured
  # for the tests before keeps them (only the tpsim target is built here either way).
  tests_option=()
  grep -qs '^TPSIM_BUILD_TESTS:BOOL=ON' "$build/CMakeCache.txt" || tests_option=(-DTPSIM_BUILD_TESTS=OFF -DTPSIM_BUILD_BENCH=OFF)
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${tests_option[@]}"
  cmake --build "$build" -j "$jobs" --target tpsim
  echo "== tpsim run scenarios/quickstart.yaml"
  cd "$root"
  "$build/cli/tpsim" run scenarios/quickstart.yaml
else
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTPSIM_BUILD_TESTS=ON -DTPSIM_BUILD_BENCH=ON
  cmake --build "$build" -j "$jobs"
  echo "== ctest"
  cd "$build"
  ctest -j "$jobs" --output-on-failure
fi
