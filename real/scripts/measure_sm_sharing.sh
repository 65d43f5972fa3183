#!/usr/bin/env bash
# A GEMM beside a real NCCL all-gather (2+ GPUs, one node): what settles tpsim's SM-sharing model
# (sim/sm_sharing.hpp: the GEMM on the SMs NCCL's channels leave, then a tail of gemm.shared_tail_tiles tile
# times) where our single-GPU points stood in a copy kernel for NCCL's CTAs:
#   1. PyTorch's benchmark shape (pytorch/pytorch#172714): an 8192^3 GEMM beside an all-gather of 64 MiB per rank,
#      the all-gather launched first (its CTAs hold their SMs, as the benchmark enqueues it) and second;
#   2. the same with NCCL's channel count forced (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = 8, 16, 24, 32): the
#      SMs taken, one per channel, against the GEMM's slowdown;
#   3. the same under NCCL_ALGO=NVLS (16 channels on SM90) and Ring;
#   4. the copy kernel at 16, 24 and 32 blocks on the same GEMMs, so both partners are timed on one machine;
#   5. every GPU pulling from the others at once over the copy engines (async TP's all-gather, 16 MiB .. 1 GiB).
# `tpsim calibrate` fits gemm.shared_tail_tiles on the copy-kernel points (and nccl.sms on the all-gather ones),
# copy_engine.all_ranks_link_efficiency on the pulls;
# `tpsim validate` checks the all-gather points against the model with the fitted profile.
# Usage: [OUT=DIR] real/scripts/measure_sm_sharing.sh [tpsim-real options, e.g. --gpu h100-sxm]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$root/real/results/sm-sharing}"
real="${TPSIM_REAL:-$root/build/real/tpsim-real}"
mkdir -p "$out"
[ -x "$real" ] || { echo "measure_sm_sharing: no $real (build with CUDA first)" >&2; exit 2; }
shapes=(--shape 8192x8192x8192 --shape 16384x7168x8192 --shape 8192x3584x4096 --shape 4096x4096x4096)
ag=(overlap "${shapes[@]}" --partner allgather --bytes 512MiB)
step() {  # name, then the command: a failed step is recorded and the next one runs
  local name="$1"
  shift
  echo "== $name: $*"
  "$@" --json "$out/$name.jsonl" >"$out/$name.txt" 2>&1 || echo "$name failed (see $out/$name.txt)"
}
step allgather_first "$real" "${ag[@]}" --partner-first "$@"
step allgather_second "$real" "${ag[@]}" "$@"
for channels in 8 16 24 32; do
  step "allgather_first_channels$channels" env NCCL_MIN_NCHANNELS="$channels" NCCL_MAX_NCHANNELS="$channels" \
    "$real" "${ag[@]}" --partner-first "$@"
done
for algo in Ring NVLS; do
  step "allgather_first_$algo" env NCCL_ALGO="$algo" "$real" "${ag[@]}" --partner-first "$@"
done
for blocks in 16 24 32; do
  step "copy_kernel_first_blocks$blocks" "$real" overlap "${shapes[@]}" --partner copy_kernel --bytes 1GiB \
    --copy-blocks "$blocks" --partner-first "$@"
done
step pulls_all_ranks "$real" memcpy --path peer_all_ranks -b 16MiB -e 1GiB -f 4 "$@"
tpsim="${TPSIM:-$root/build/cli/tpsim}"
"$tpsim" calibrate "$out"/copy_kernel_first_blocks*.jsonl "$out"/allgather_first.jsonl "$out"/pulls_all_ranks.jsonl --base "$root/scenarios/presets/profiles/h100-sxm.yaml" \
  -o "$out/profile.yaml" >"$out/calibrate.txt" 2>&1 || echo "calibrate failed (see $out/calibrate.txt)"
"$tpsim" validate "$out"/allgather_*.jsonl --profile "$out/profile.yaml" >"$out/validation.md" 2>&1 ||
  echo "validate failed (see $out/validation.md)"
