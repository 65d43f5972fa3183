#!/usr/bin/env bash
# Builds tpsim and rewrites every command output quoted in README.md and docs/*.md from its command
# (tools/doc_outputs.py update); review the result with `git diff`. Usage: tools/update_docs.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
cmake --build "$build" --target tpsim
exec python3 "$root/tools/doc_outputs.py" update --tpsim "$build/cli/tpsim"
