#!/usr/bin/env bash
# The calibrate-on-your-cluster workflow, planned without GPUs: every suite runs on the scenario's own
# shapes, the fit takes the single-op files, validation takes the composites, held out by size too.
# Usage: workflow_dry_run_test.sh BUILD_DIR SCENARIO OUT
set -euo pipefail
build="$1" scenario="$2" out="$3"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
plan="$(TPSIM_BUILD_DIR="$build" TPSIM_DRY_RUN=1 TPSIM_DRY_RUN_GPUS=8 bash "$root/tools/calibrate_cluster.sh" "$scenario" "$out")"
echo "$plan"
expect() { grep -q -- "$1" <<<"$plan" || { echo "FAILED: the plan lacks: $1" >&2; exit 1; }; }
# The quickstart's largest GEMM: Llama-3.1-8B's gate_up over 8 x 8192 tokens at TP 8.
expect "== scenario GEMM 65536x3584x4096; 8 GPU(s) here"
expect "gemm --shapes-file $out/shapes.txt"
expect "collective --op allreduce --op allgather --op reducescatter"
expect "async-tp --shape 65536x3584x4096 --pattern allgather_gemm --pattern gemm_reducescatter --chunks 8 --chunks 16"
expect "dtp --shape 65536x3584x3584 --modules 8 --delta 0 --delta 1 --delta 3"
expect "launch --json $out/launch.jsonl"
expect "memcpy --path peer_all_ranks -b 16MiB -e 1GiB -f 4 --json $out/pulls.jsonl"
expect "env NCCL_PROTO=LL128 .*collective --op allgather"
expect "env NCCL_ALGO=Ring .*collective --op allreduce"
expect "calibrate $out/gemm.jsonl $out/memcpy.jsonl $out/launch.jsonl $out/collective.jsonl $out/collective_ring_allreduce.jsonl $out/collective_ll.jsonl $out/collective_ll128.jsonl $out/pulls.jsonl $out/overlap_nccl.jsonl -o $out/profile.yaml"
expect "validate .*async_tp.jsonl .*--holdout size"
[ "$(grep -vc '^#' "$out/shapes.txt")" -eq 8 ] || { echo "FAILED: expected 8 shapes in $out/shapes.txt" >&2; exit 1; }
echo "workflow plan ok"
