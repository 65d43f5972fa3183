#!/usr/bin/env bash
# Cluster-job simulation cost: the shipped data-parallel and pipeline jobs from 64 to 16,384 GPUs (one replica's
# programs simulated, the replicas' collectives in closed form), each with `taskset` on one core when
# available: wall time and peak memory of `tpsim run` per scenario, and the 64-GPU one and the 32-GPU pipeline again
# with --no-symmetry.
# Usage: bench/cluster_job_bench.sh [path/to/tpsim]   (default build/cli/tpsim)
set -euo pipefail
tpsim="${1:-build/cli/tpsim}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
one_core=()
command -v taskset >/dev/null && one_core=(taskset -c 0)
for scenario in train/llama3-8b-tp8-fsdp8-train train/llama3-70b-tp8-fsdp32-train pipeline/llama3-70b-tp8-pp4-train \
  pipeline/llama3-405b-tp8-pp16-dp128-train pipeline/llama3-405b-tp8-pp16-dp128-schedules \
  pipeline/llama3-405b-nvl72-tp8-pp9-dp228-train; do
  /usr/bin/time -f "cluster_job_bench: $scenario: %e s wall, %M KiB peak resident" \
    "${one_core[@]}" "$tpsim" run "$root/scenarios/$scenario.yaml" --no-progress >/dev/null
done
# The check: the 64-GPU job with every data-parallel replica simulated, their collectives step by step.
/usr/bin/time -f "cluster_job_bench: llama3-8b-tp8-fsdp8-train --no-symmetry: %e s wall, %M KiB peak resident" \
  "${one_core[@]}" "$tpsim" run "$root/scenarios/train/llama3-8b-tp8-fsdp8-train.yaml" --no-symmetry --no-progress >/dev/null
# And the pipeline simulated whole: every stage at once, the sends as flows (3 schedules).
/usr/bin/time -f "cluster_job_bench: llama3-70b-tp8-pp4-train --no-symmetry: %e s wall, %M KiB peak resident" \
  "${one_core[@]}" "$tpsim" run "$root/scenarios/pipeline/llama3-70b-tp8-pp4-train.yaml" --no-symmetry --no-progress >/dev/null
