#!/usr/bin/env bash
# One-command set-up on a fresh Debian machine: installs every package tpsim needs, builds it, then
#   quickstart  runs the quickstart scenario (the default)
#   test        runs every test with CTest
# Usage: tools/setup.sh [quickstart|test]   (as root, or with sudo available)
set -euo pipefail

mode="${1:-quickstart}"
case "$mode" in
  quickstart|test) ;;
  *) echo "usage: $0 [quickstart|test]" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TPSIM_BUILD_DIR:-$root/build}"

packages=(
  g++ cmake make pkg-config
  libsimgrid-dev libyaml-cpp-dev libboost-graph-dev nlohmann-json3-dev libcli11-dev libeigen3-dev
  catch2 libbenchmark-dev
  python3 python3-matplotlib
  clang libclang-rt-dev  # tools/fuzz.sh and tools/sanitize.sh: clang's libFuzzer, ASan and UBSan runtimes
)

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
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$jobs"

if [ "$mode" = quickstart ]; then
  echo "== tpsim run scenarios/quickstart.yaml"
  cd "$root"
  "$build/cli/tpsim" run scenarios/quickstart.yaml
else
  echo "== ctest"
  cd "$build"
  ctest -j "$jobs" --output-on-failure
fi
