#!/usr/bin/env bash
# Regenerates the measurement files from the public tables and the default profiles from them
# (h100/h200/h800 from the H100 data, the copy engine's rate while every rank pulls from TorchTitan's async-TP
# trace; a100's memory-bound regime from gpt-fast's decode runs; b200 from
# its GEMMs over the H100 profile; every profile's network section from the multi-node B200 sweep).
# The H200 all-reduce sweep is timed from Python around torch.distributed (a ~40 us per-call floor):
# the validation report keeps it out of the H100 fit; the h200 profile fits its NVLS on it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tpsim="${1:-$root/build/cli/tpsim}"
cd "$root"
"$tpsim" calibrate convert calibrate/data/public -o calibrate/data/measurements
# The network transport (ib-rail) comes from the 4-node B200 all-reduce sweep, the only multi-node
# sweep in the data (EFA v4, 50 GB/s per GPU); the 4-node H200 ring row checks it.
fit=(calibrate/data/measurements/gemm_h100_bf16.jsonl calibrate/data/measurements/collectives_h100_latency.jsonl
     calibrate/data/measurements/small_allreduce_h100.jsonl calibrate/data/measurements/p2p_bandwidth.jsonl
     calibrate/data/measurements/allreduce_multinode_busbw.jsonl
     calibrate/data/measurements/async_tp_trace_pulls.jsonl)
for gpu in h100-sxm h800-sxm a100-sxm a100-sxm-40gb h100-sxm-96gb h100-pcie h20; do
  # The A100 (80 GB) takes its memory-bound regime (streaming efficiency, per-kernel time) from gpt-fast's
  # published decode runs on it, fitted after the transfer; the other values are the H100 fit's.
  decode=()
  [ "$gpu" = a100-sxm ] && decode=(calibrate/data/measurements/decode_tp_gpt_fast.jsonl)
  "$tpsim" calibrate "${fit[@]}" "${decode[@]}" --measured-on h100-sxm --gpu "$gpu" --base none \
    -o "scenarios/presets/profiles/$gpu.yaml"
done
# H200: the H100 fit, except torch.distributed's host time per call (launch.collective_host_us, on the sweep's
# ring rows timed one call at a time: the other profiles carry it as calibrate::kTorchCollectiveHostUs, which a
# test refits) and NVLS, fitted on the H200 sweep's NVLS rows and the NVLS rows of the
# NVLS-on/off table (NCCL 2.27 on H200 streams faster than the H100 rows), whose 4-GPU ring with NVLS
# enabled sets nvls.min_ranks: every other row held out in the profile's own fit report. Our own H200 GEMMs
# beside a copy kernel that held 4-132 SMs first fit gemm.shared_tail_tiles (the other profiles carry that fit as
# calibrate::kH200SharedTailTiles, which a test refits).
"$tpsim" calibrate calibrate/data/measurements/allreduce_h200_busbw.jsonl \
  calibrate/data/measurements/nvls_vs_ring_h200.jsonl \
  real/results/h200-2026-12-04/overlap_partner_first/overlap_partner_first_blocks*.jsonl \
  --measured-on h200-sxm --gpu h200-sxm \
  --base scenarios/presets/profiles/h100-sxm.yaml -o scenarios/presets/profiles/h200-sxm.yaml
# B200: its own GEMMs (fractions of B200's peaks) and nvls.min_ranks (the NVLS-on/off ramp: NCCL runs
# rings on 4 and 5 GPUs); collectives, attention and launch from the H100 fit. The ramp (one size)
# cannot fit a latency; the B200 sweep's 1-node rows, timed with a per-call floor, give a 80 us
# latency and 61% held-out error, so they check the H100 fit instead (docs/validation.md).
"$tpsim" calibrate calibrate/data/measurements/gemm_b200_bf16.jsonl calibrate/data/measurements/nvls_vs_ring_b200.jsonl \
  --measured-on b200 --gpu b200 \
  --base scenarios/presets/profiles/h100-sxm.yaml -o scenarios/presets/profiles/b200.yaml
echo "profiles written; tools/update_docs.sh refreshes the validation tables of docs/validation.md" \
  "(tools/doc_tables.py validation-h100, validation-h200, validation-summary)"
