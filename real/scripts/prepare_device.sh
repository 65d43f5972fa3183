#!/usr/bin/env bash
# Run on a full build machine before a GPU run: writes the shapes file of the shipped scenarios
# (real/shapes/shipped_scenarios.txt) and a CMake prefix with the two header-only libraries that a
# TPSIM_REAL_ONLY build needs (nlohmann-json, CLI11) under .device/prefix, for machines that lack them,
# and this build's tpsim-real and GPU check under .device/bin.
# Usage: real/scripts/prepare_device.sh [BUILD_DIR]   (BUILD_DIR holds a full build; default build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
real="$build/real/tpsim-real"
[ -x "$real" ] || {
echo "prepare_device: no $real; build first (tools/setup.sh test)" >&2; exit 2; }

"$real" shapes --scenario "$root"/scenarios/quickstart.yaml >/dev/null  # fails early on a broken build
bash "$root/real/scripts/shipped_shapes.sh" "$real" >"$root/real/shapes/shipped_scenarios.txt.tmp"
mv "$root/real/shapes/shipped_scenarios.txt.tmp" "$root/real/shapes/shipped_scenarios.txt"

prefix="$root/.device/prefix"
rm -rf "$prefix"
mkdir -p "$prefix/include" "$prefix/share/cmake"
cp -r /usr/include/nlohmann /usr/include/CLI "$prefix/include/"
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$prefix/share/cmake/"
# The binaries built here travel too: the GPU machine runs them when its libraries load them. A full build
# registers the GPU check as tests/test_real_gpu; the scripts run it under its real-only build's name.
mkdir -p "$root/.device/bin"
cp "$real" "$root/.device/bin/"
check="$build/real/tpsim_real_gpu_check"
[ -x "$check" ] || check="$build/tests/test_real_gpu"
cp "$check" "$root/.device/bin/tpsim_real_gpu_check"
echo "prepare_device: $(grep -vc '^#' "$root/real/shapes/shipped_scenarios.txt") shapes; prefix in .device/prefix"
