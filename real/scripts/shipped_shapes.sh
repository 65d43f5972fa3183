#!/usr/bin/env bash
# Prints every distinct GEMM shape of the scenarios shipped in scenarios/ (ops scenarios list their own),
# one "MxNxK" per line, sorted: the GEMM sweep a GPU run measures.
# Usage: real/scripts/shipped_shapes.sh TPSIM_REAL_BINARY
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
real="$1"
echo "# GEMM shapes (MxNxK) of the scenarios in scenarios/, from: real/scripts/shipped_shapes.sh"
for scenario in "$root"/scenarios/*.yaml "$root"/scenarios/{forward,train,pipeline,inference,moe,published}/*.yaml; do
  grep -q "phase: *ops" "$scenario" && continue
  "$real" shapes --scenario "$scenario" | grep -v '^#' | cut -d' ' -f1
done | sort -t x -k1,1n -k2,2n -k3,3n -u
