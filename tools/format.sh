#!/usr/bin/env bash
# Applies clang-format to every C++ and CUDA file; with --tidy also runs clang-tidy (needs a configured build/).
# Usage: tools/format.sh [--check] [--tidy]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu')
check=0; tidy=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    --tidy) tidy=1 ;;
    *) echo "usage: $0 [--check] [--tidy]" >&2; exit 2 ;;
  esac
done
if [ "$check" -eq 1 ]; then
  clang-format --dry-run --Werror "${files[@]}"
else
  clang-format -i "${files[@]}"
fi
if [ "$tidy" -eq 1 ]; then
  mapfile -t sources < <(git ls-files '*.cpp' | grep -v '^tests/')
  clang-tidy -p build --quiet "${sources[@]}"
fi
