#!/usr/bin/env bash
# Training-step simulation cost: Llama-3.1-70B, TP=8, 80 layers, 8 micro-batches of 1 x 8192 tokens, full
# recomputation, sp and async (8 chunks, copy engine): wall time and peak memory of `tpsim run`.
# Usage: bench/train_step_bench.sh [path/to/tpsim]   (default build/cli/tpsim)
set -euo pipefail
tpsim="${1:-build/cli/tpsim}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/bench.yaml" <<YAML
name: train-step-bench
model: llama-3.1-70b
hardware: {gpu: h100-sxm}
workload: {phase: train, batch: 1, seq_len: 8192, layers: all, microbatches: 8, recompute: full}
parallelism: {tp: 8}
variants:
  - {name: sp, tp_mode: sp}
  - {name: async, tp_mode: async, chunks: 8, transport: copy_engine}
YAML
/usr/bin/time -f "train_step_bench: %e s wall, %M KiB peak resident (the largest process)" \
  "$tpsim" run "$work/bench.yaml" --no-progress
