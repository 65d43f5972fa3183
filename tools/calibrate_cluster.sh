#!/usr/bin/env bash
# The calibrate-on-your-cluster workflow in one command, on a machine with GPUs and a full build:
#   1. the scenario's GEMM shapes (tpsim-real shapes)
#   2. measure: GEMMs, copies, single-GPU overlap; with 2+ GPUs also NCCL collectives (and all-gathers
#      forced to LL and to LL128), GEMM +
#      collective overlap, async-TP pipelines and DTP chains, on the scenario's own shapes
#   3. fit a profile on the single-op points (tpsim calibrate)
#   4. validate it on the composite points, with that profile and held out by size (tpsim validate)
#   5. run the scenario with the fitted profile
# Output: OUT/{shapes.txt, *.jsonl, *.txt logs, profile.yaml, validation.md, validation-holdout.md,
#              scenario.yaml (the scenario calibrated with profile.yaml), run.txt}
# Usage: tools/calibrate_cluster.sh SCENARIO OUT [--gpu PRESET]    (TPSIM_DRY_RUN=1 prints the commands)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 2 ] || { echo "usage: $0 SCENARIO OUT [--gpu PRESET]" >&2; exit 2; }
scenario="$1" out="$2"
shift 2
gpu_args=("$@")
build="${TPSIM_BUILD_DIR:-$root/build}"
tpsim="$build/cli/tpsim" real="$build/real/tpsim-real"
[ -f "$scenario" ] || { echo "calibrate_cluster: no scenario $scenario" >&2; exit 2; }
[ -x "$real" ] || { echo "calibrate_cluster: no $real (build with CUDA first: tools/setup.sh test)" >&2; exit 2; }
mkdir -p "$out"

run() {  # log name, then the command; a failure stops the workflow
  local name="$1"
  shift
  echo "== $name: $*"
  [ -n "${TPSIM_DRY_RUN:-}" ] && return 0
  "$@" 2>&1 | tee "$out/$name.txt"
}
failed=()
measure() {  # as run, but a failed suite (a CUDA error, a point failing its check) lets the others go on
  run "$@" || failed+=("$1")
}

"$real" shapes --scenario "$scenario" >"$out/shapes.txt"
# The largest GEMM (by FLOPs) stands for the scenario in the composite suites.
read -r m n k < <(grep -v '^#' "$out/shapes.txt" | cut -d' ' -f1 | tr x ' ' |
  awk '{print $1 * $2 * $3, $0}' | sort -g | tail -1 | cut -d' ' -f2-)
gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
if [ -n "${TPSIM_DRY_RUN:-}" ]; then gpus="${TPSIM_DRY_RUN_GPUS:-8}"; fi
if [ "$gpus" -lt 1 ]; then
  echo "calibrate_cluster: nvidia-smi sees no GPU here; run this on a GPU machine (TPSIM_DRY_RUN=1 shows the plan)" >&2
  exit 2
fi
echo "== scenario GEMM ${m}x${n}x${k}; $gpus GPU(s) here"
bytes=$((m * k * 2))  # the GEMM's input: what an all-gather in front of it moves

measure gemm "$real" gemm --shapes-file "$out/shapes.txt" --json "$out/gemm.jsonl" "${gpu_args[@]}"
measure memcpy "$real" memcpy -b 1MiB -e 1GiB -f 4 --json "$out/memcpy.jsonl" "${gpu_args[@]}"
measure overlap "$real" overlap --shape "${m}x${n}x${k}" --partner copy_kernel --partner memcpy_device \
  --bytes "$bytes" --json "$out/overlap.jsonl" "${gpu_args[@]}"
measure launch "$real" launch --json "$out/launch.jsonl" "${gpu_args[@]}"
singles=("$out/gemm.jsonl" "$out/memcpy.jsonl" "$out/launch.jsonl")
composites=("$out/overlap.jsonl")
sm_share=()  # GEMMs beside collectives: they fit nccl.sms
if [ "$gpus" -ge 2 ]; then
  measure collective "$real" collective --op allreduce --op allgather --op reducescatter -b 8 -e 1GiB \
    --json "$out/collective.jsonl" "${gpu_args[@]}"
  # All-reduces run as rings (NCCL_ALGO, recorded per point): beside the all-gathers (half their steps)
  # they tell NCCL's per-call latency (nccl.call_latency_us) from its per-step latency.
  measure collective_ring_allreduce env NCCL_ALGO=Ring "$real" collective --op allreduce -b 8 -e 64MiB \
    --json "$out/collective_ring_allreduce.jsonl" "${gpu_args[@]}"
  # Rings in each low-latency protocol (NCCL_PROTO, recorded per point): the nccl.ll / nccl.ll128 regimes.
  measure collective_ll env NCCL_PROTO=LL "$real" collective --op allgather -b 8 -e 64MiB \
    --json "$out/collective_ll.jsonl" "${gpu_args[@]}"
  measure collective_ll128 env NCCL_PROTO=LL128 "$real" collective --op allgather -b 8 -e 256MiB \
    --json "$out/collective_ll128.jsonl" "${gpu_args[@]}"
  # Every GPU pulling from the others at once (async TP's all-gather): copy_engine.all_ranks_link_efficiency.
  measure pulls "$real" memcpy --path peer_all_ranks -b 16MiB -e 1GiB -f 4 --json "$out/pulls.jsonl" "${gpu_args[@]}"
  measure overlap_nccl "$real" overlap --shape "${m}x${n}x${k}" --partner allgather --partner memcpy_peer \
    --bytes "$bytes" --json "$out/overlap_nccl.jsonl" "${gpu_args[@]}"
  measure async_tp "$real" async-tp --shape "${m}x${n}x${k}" --pattern allgather_gemm --pattern gemm_reducescatter \
    --chunks "$gpus" --chunks $((2 * gpus)) --transport nccl --transport copy_engine \
    --json "$out/async_tp.jsonl" "${gpu_args[@]}"
  # delta as a scenario's tp_mode dtp means it; 0 is blocking TP timed against itself (a speedup of 1).
  measure dtp "$real" dtp --shape "${m}x${n}x$((k < n ? k : n))" --modules 8 --delta 0 --delta 1 --delta 3 \
    --json "$out/dtp.jsonl" "${gpu_args[@]}"
  singles+=("$out/collective.jsonl" "$out/collective_ring_allreduce.jsonl" "$out/collective_ll.jsonl"
    "$out/collective_ll128.jsonl" "$out/pulls.jsonl")
  sm_share+=("$out/overlap_nccl.jsonl")
  composites+=("$out/overlap_nccl.jsonl" "$out/async_tp.jsonl" "$out/dtp.jsonl")
fi

if [ -z "${TPSIM_DRY_RUN:-}" ]; then  # a suite that failed early wrote no file
  present() { for f in "$@"; do [ -f "$f" ] && echo "$f"; done; }
  mapfile -t singles < <(present "${singles[@]}")
  mapfile -t composites < <(present "${composites[@]}")
  mapfile -t sm_share < <(present "${sm_share[@]}")
fi
run calibrate "$tpsim" calibrate "${singles[@]}" "${sm_share[@]}" -o "$out/profile.yaml"
run validation "$tpsim" validate "${singles[@]}" "${composites[@]}" --profile "$out/profile.yaml"
run validation-holdout "$tpsim" validate "${singles[@]}" "${composites[@]}" --holdout size
if [ -z "${TPSIM_DRY_RUN:-}" ]; then
  cp "$out/validation.txt" "$out/validation.md"
  cp "$out/validation-holdout.txt" "$out/validation-holdout.md"
  sed "s|^calibration:.*|calibration: $(cd "$out" && pwd)/profile.yaml|" "$scenario" >"$out/scenario.yaml"
fi
run run "$tpsim" run "$out/scenario.yaml"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "== done with failed suites: ${failed[*]} (their logs in $out; points that failed a check are not fitted)"
  exit 1
fi
echo "== done: $out"
