#!/usr/bin/env bash
# Sweep throughput: 1,000 one-layer points x 4 variants (Llama-3.1-8B, TP=8) with tpsim sweep -j N.
# Usage: bench/sweep_bench.sh [path/to/tpsim] [jobs]   (defaults: build/cli/tpsim, nproc)
set -euo pipefail
tpsim="${1:-build/cli/tpsim}"
jobs="${2:-$(nproc)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

seqs=""
for k in $(seq 1 100); do seqs+="${seqs:+, }$((128 * k))"; done
cat > "$work/bench.yaml" <<YAML
name: sweep-bench
model: llama-3.1-8b
hardware: {gpu: h100-sxm}
workload: {phase: forward, batch: 1, seq_len: 128, layers: 1}
parallelism: {tp: 8}
variants:
  - {name: tp, tp_mode: tp}
  - {name: sp, tp_mode: sp}
  - {name: async, tp_mode: async, chunks: 8}
  - {name: nocomm, tp_mode: nocomm}
sweep:
  workload.batch: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  workload.seq_len: [$seqs]
YAML

start=$(date +%s.%N)
"$tpsim" sweep "$work/bench.yaml" -o "$work/out" -j "$jobs" --no-progress 2>/dev/null
end=$(date +%s.%N)
rows=$(($(wc -l < "$work/out/results.csv") - 1))
awk -v s="$start" -v e="$end" -v r="$rows" -v j="$jobs" 'BEGIN {
  w = e - s; printf "1000 points x 4 variants (%d rows), -j %d: %.1f s wall, %.0f points/s; 10,000 points: about %.0f s\n", r, j, w, 1000 / w, 10000 / (1000 / w) }'
