#!/usr/bin/env bash
# One GPU, one call: builds tpsim-real (TPSIM_REAL_ONLY) and measures what a single GPU can show:
# the GEMM sweep over the shipped scenarios' shapes (bf16; fp8 on the large ones), HBM bandwidth through
# the copy engine and an SM copy kernel, the host time per kernel launch and per cross-stream wait,
# and a GEMM overlapped with each copy (single-GPU stand-ins for communication contention; the copy
# kernel at 4 to 132 blocks holding its SMs first, as NCCL's channels do), each overlap sample queued
# whole behind a spinning kernel. Then PyTorch's own behaviour (real/scripts/torch_probes.py): the
# sustained GEMM rate and clock over 40 s at the card's power limit, the clock at several duty cycles, the
# limiter's averaging time (GEMMs half of each cycle, cycles from 4 ms to 2 s),
# small kernels eager and from a CUDA
# graph, the caching allocator's peak in training steps, causal attention's rates, and a profiler
# trace of a training step; last, context parallelism's attention blocks and merge at 32,768 tokens per GPU.
# Every tpsim-real point records NVML's SM clock, power and temperature while it was timed
# (gpu_state), or why not. Writes JSON lines, logs and nvidia-smi's view under $OUT (default
# real/results/run), and prints a short summary last: how many points recorded their GPU state and how
# many queued samples were late. Each step has its own time limit (a step that overruns is recorded
# and the next one runs). Leaves the GPU's settings alone.
# Not measurable on one GPU (needs two or more): collectives, GEMM + collective overlap, async-TP
# pipelines and DTP chains (tools/calibrate_cluster.sh runs them; docs/real.md lists what is unmeasured).
# Prepare first, on a full build: real/scripts/prepare_device.sh (shapes file, .device/prefix, and
# .device/bin: tpsim-real built here, used there when it runs, else built there).
# Usage: [OUT=DIR] [TPSIM_GIT_REVISION=REV] real/scripts/measure_single_gpu.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$root/real/results/run}"
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu \
  --format=csv >"$out/nvidia-smi.csv" || echo "nvidia-smi failed (recorded)"

# NCCL: the CUDA folder's, else the one a Python wheel carries.
nccl_lib="" nccl_include=""
for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
  for lib in "$dir"/libnccl.so "$dir"/libnccl.so.2; do [ -z "$nccl_lib" ] && [ -e "$lib" ] && nccl_lib="$lib"; done
done
for dir in /usr/local/cuda/include /usr/include; do [ -z "$nccl_include" ] && [ -e "$dir/nccl.h" ] && nccl_include="$dir"; done
if [ -z "$nccl_lib" ] || [ -z "$nccl_include" ]; then
  wheel="$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null || true)"
  [ -n "$wheel" ] && nccl_lib="$(ls "$wheel"/lib/libnccl.so* | head -1)" && nccl_include="$wheel/include"
  export LD_LIBRARY_PATH="${wheel:+$wheel/lib:}${LD_LIBRARY_PATH:-}"
fi
echo "== NCCL: $nccl_lib ($nccl_include)"

real="$root/.device/bin/tpsim-real" check="$root/.device/bin/tpsim_real_gpu_check"
loadable() { [ -x "$1" ] && ldd "$1" >/dev/null 2>&1 && ! ldd "$1" | grep -q 'not found'; }
if loadable "$real" && loadable "$check" && "$real" --help >/dev/null 2>&1; then
  echo "== using the carried $real"
else
  build="$root/build-device"
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DTPSIM_REAL_ONLY=ON \
    -DCMAKE_PREFIX_PATH="$root/.device/prefix" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DTPSIM_NCCL_LIBRARY="$nccl_lib" -DTPSIM_NCCL_INCLUDE="$nccl_include" \
    -DTPSIM_GIT_REVISION="${TPSIM_GIT_REVISION:-unknown}" >"$out/cmake.txt"
  cmake --build "$build" -j "$(nproc)" >"$out/build.txt"
  real="$build/real/tpsim-real" check="$build/real/tpsim_real_gpu_check"
  echo "== built $real"
fi

echo "== GPU check: every single-GPU subcommand on small problems, results checked"
timeout 90 "$check" "$out/gpu_check" >"$out/gpu_check.txt" 2>&1 || status_check=$?
cat "$out/gpu_check.txt"

status=${status_check:-0}
measure() {  # name, time limit in seconds, then tpsim-real arguments
  local name="$1" limit="$2"
  shift 2
  echo "== $name: tpsim-real $*"
  timeout "$limit" "$real" "$@" --json "$out/$name.jsonl" >"$out/$name.txt" 2>&1 || { echo "($name: exit $?)"; status=1; }
  tail -n 40 "$out/$name.txt"
}
shapes="$root/real/shapes/shipped_scenarios.txt"
measure gemm_bf16 120 gemm --shapes-file "$shapes"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "== PyTorch probes"
  timeout 240 env PYTHONUNBUFFERED=1 python3 "$root/real/scripts/torch_probes.py" "$out/torch" \
    sustained duty memory trace graph attention >"$out/torch_probes.txt" 2>&1 || { echo "(torch probes: exit $?)"; status=1; }
  cat "$out/torch_probes.txt"
  # The caching allocator's reserve under expandable segments, which Megatron-Bridge's H100 recipes set
  # (PYTORCH_CUDA_ALLOC_CONF; the reserve above was fitted without it): the same steps, memory.json in its own folder.
  echo "== PyTorch memory probe under expandable segments"
  timeout 90 env PYTHONUNBUFFERED=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
    python3 "$root/real/scripts/torch_probes.py" "$out/torch_expandable" memory >"$out/torch_expandable.txt" 2>&1 ||
    { echo "(expandable memory probe: exit $?)"; status=1; }
  cat "$out/torch_expandable.txt"
  # The limiter's averaging time: GEMMs half of each cycle at cycles from 4 ms to 2 s (window.json).
  echo "== PyTorch limiter-window probe"
  timeout 90 env PYTHONUNBUFFERED=1 python3 "$root/real/scripts/torch_probes.py" "$out/torch" window \
    >"$out/torch_window.txt" 2>&1 || { echo "(window probe: exit $?)"; status=1; }
  cat "$out/torch_window.txt"
else
  echo "== PyTorch probes skipped: no python3 with torch and a CUDA device"
fi
for blocks in 4 8 16 32 64 132; do  # the copy kernel holding its SMs first, as a collective issued before the GEMM
  measure "overlap_partner_first_blocks$blocks" 20 overlap --shape 8192x8192x8192 --shape 8192x3584x4096 \
    --shape 16384x7168x8192 --shape 4096x4096x4096 --partner copy_kernel --bytes 1GiB --copy-blocks "$blocks" --partner-first
done
for blocks in 16 32; do
  measure "overlap_blocks$blocks" 40 overlap --shape 8192x3584x4096 --shape 65536x3584x4096 \
    --partner memcpy_device --partner copy_kernel --bytes 1GiB --copy-blocks "$blocks"
done
measure memcpy 40 memcpy --path device --path copy_kernel -b 1MiB -e 4GiB -f 4
measure launch 30 launch
measure gemm_fp8 30 gemm --dtype fp8 --shape 8192x8192x8192 --shape 8192x3584x4096 --shape 8192x4096x1792 \
  --shape 65536x3584x4096 --shape 16384x7168x8192
measure gemm_square 30 gemm --shape 1024x1024x1024 --shape 2048x2048x2048 --shape 4096x4096x4096 \
  --shape 8192x8192x8192 --shape 16384x16384x16384
# Last, so that it cannot take the time of the measurements above: context parallelism's blocks at 32,768 tokens
# per GPU (TorchTitan's long-context rows), cp_blocks.json.
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  # Context parallelism's blocks at 32,768 tokens per GPU (TorchTitan's long-context rows): cp_blocks.json.
  echo "== PyTorch context-parallel block probe"
  timeout 60 env PYTHONUNBUFFERED=1 python3 "$root/real/scripts/torch_probes.py" "$out/torch" cp_blocks \
    >"$out/torch_cp_blocks.txt" 2>&1 || { echo "(cp_blocks probe: exit $?)"; status=1; }
  cat "$out/torch_cp_blocks.txt"
fi
echo "== GPU state: $(cat "$out"/*.jsonl | grep -c '"gpu_state":{"recorded":true') points recorded it," \
  "$(cat "$out"/*.jsonl | grep -c '"gpu_state":{"recorded":false') did not" \
  "($(cat "$out"/*.jsonl | grep -o '"why":"[^"]*"' | sort -u | head -1))"
echo "== late queued samples: $(cat "$out"/*.jsonl | grep -o '"late_samples":[0-9]*' | awk -F: '{s += $2} END {print s + 0}')"
echo "== done: status $status; files in $out"
exit "$status"
