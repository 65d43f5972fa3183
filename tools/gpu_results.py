#!/usr/bin/env python3
"""Summarises one GPU run's results folder (real/results/NAME/) as the markdown tables its README quotes.

  gpu_results.py FOLDER    prints: the sustained GEMM clock, small kernels, HBM copies, a GEMM beside a
                           copy kernel holding SMs, the allocator's peaks, causal attention rates

Reads tpsim-real's JSON lines and torch_probes.py's JSON files; exits 2 naming a missing file.
"""
import json
import statistics
import sys
from pathlib import Path


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def need(folder, name):
    path = folder / name
    if not path.exists():
        sys.exit(f"gpu_results: {path} is missing")
    return path


def sustained(folder):
    d = json.loads(need(folder, "torch/sustained.json").read_text())
    w = d["windows"]
    steady = w[len(w) // 2:]
    print("| sustained 8192^3 bf16 GEMMs | TFLOP/s | SM clock MHz | power W |")
    print("|---|---|---|---|")
    first = w[0]
    print(f"| first {first['ms'] / 1e3:.2f} s | {first['tflops']:.0f} | {first['sm_clock_mhz']:.0f} "
          f"| {first['power_W']:.0f} |")
    print(f"| second half of {d['seconds']:.0f} s (median) | {statistics.median(r['tflops'] for r in steady):.0f} "
          f"| {statistics.median(r['sm_clock_mhz'] for r in steady):.0f} "
          f"| {statistics.median(r['power_W'] for r in steady):.0f} |")
    reasons = sorted({r["clock_event_reasons"] for r in steady})
    print(f"\nPower limit {d['power_limit_W']:.0f} W; NVML clock-event reasons in the second half: "
          f"{', '.join(hex(r) for r in reasons)}.")
    sweep = [p for p in lines(need(folder, "gemm_bf16.jsonl")) if p["median_s"] > 1e-3]
    clocks = [p["gpu_state"]["sm_clock_mhz"]["median"] for p in sweep if p["gpu_state"]["recorded"]]
    print(f"tpsim-real's bf16 sweep, its {len(sweep)} GEMMs over 1 ms: SM clock median "
          f"{statistics.median(clocks):.0f} MHz.")


def duty(folder):
    path = folder / "torch/duty.json"
    if not path.exists():
        return
    d = json.loads(path.read_text())
    print("\n| 8192^3 GEMMs alternating with | share of time in GEMMs | GEMM TFLOP/s | SM clock MHz | power W |")
    print("|---|---|---|---|---|")
    for r in d["rows"]:
        # Files written before the probe stated `share_definition` (2026-12-04) multiplied the GEMM phase's time by
        # its GEMM count: their share is tensor_share / gemms_per_cycle.
        share = r["tensor_share"] if "share_definition" in d else r["tensor_share"] / r["gemms_per_cycle"]
        partner = "1 GiB copies" if r["partner"] == "copy" else "idle gaps"
        print(f"| {partner} | {share:.2f} | {r['gemm_tflops']:.0f} | {r['sm_clock_mhz']:.0f} | {r['power_W']:.0f} |")


def window(folder):
    path = folder / "torch/window.json"
    if not path.exists():
        return
    d = json.loads(path.read_text())
    print("\n| cycle (GEMMs half of it, idle the rest) | GEMMs per phase | GEMM TFLOP/s | first quarter | last quarter |"
          " SM clock MHz | power W |")
    print("|---|---|---|---|---|---|---|")
    for r in d["rows"]:
        print(f"| {r['cycle_s'] * 1e3:.0f} ms | {r['gemms_per_phase']} | {r['gemm_tflops']:.0f} | "
              f"{r['first_quarter_tflops']:.0f} | {r['last_quarter_tflops']:.0f} | {r.get('sm_clock_mhz', 0):.0f} | "
              f"{r.get('power_W', 0):.0f} |")


def small_kernels(folder):
    g = json.loads(need(folder, "torch/graph.json").read_text())["rows"]
    print("\n| small kernel (bf16 x.mul_) | host per eager launch us | GPU per kernel eager us | GPU per kernel in a CUDA graph us |")
    print("|---|---|---|---|")
    for r in g:
        print(f"| {r['bytes_per_kernel'] / 2**10:g} KiB moved | {r['host_per_eager_launch_us']:.1f} "
              f"| {r['gpu_per_kernel_eager_us']:.1f} | {r['gpu_per_kernel_graph_us']:.2f} |")
    chains = {p["pattern"]: p for p in lines(need(folder, "launch.jsonl"))}
    queued = [f"{k} {chains[k]['median_s'] / chains[k]['kernels'] * 1e6:.2f} us"
              for k in ("same_stream_queued", "cross_stream_queued") if k in chains]
    print(f"\ntpsim-real's empty kernels queued ahead of the GPU: {', '.join(queued)} per kernel.")


def copies(folder):
    pts = lines(need(folder, "memcpy.jsonl"))
    print("\n| copy of 4 GiB | HBM TB/s (read + write) |")
    print("|---|---|")
    for p in pts:
        if p["bytes"] == 4 * 2**30:
            print(f"| {p['path']} | {2 * p['bytes'] / p['median_s'] / 1e12:.2f} |")


def held_sms(folder):
    rows = {}
    for f in sorted((folder / "overlap_partner_first").glob("*.jsonl")):
        for p in lines(f):
            if p["pattern"] != "copy_kernel":
                continue
            rows.setdefault((p["m"], p["n"], p["k"]), {})[p["details"]["blocks"]] = p
    blocks = sorted({b for r in rows.values() for b in r})
    print("\n| GEMM slowdown beside a copy kernel that holds its SMs first | "
          + " | ".join(f"{b} blocks" for b in blocks) + " | GEMM alone us |")
    print("|---|" + "---|" * (len(blocks) + 1))
    for shape, r in sorted(rows.items()):
        cells = " | ".join(f"{r[b]['details']['gemm_slowdown']:.2f}" if b in r else "" for b in blocks)
        alone = statistics.median(p["gemm_alone_s"] for p in r.values()) * 1e6
        print(f"| {shape[0]}x{shape[1]}x{shape[2]} | {cells} | {alone:.0f} |")
    after = [p["details"]["gemm_slowdown"] for f in folder.glob("overlap_*blocks*.jsonl") for p in lines(f)]
    print(f"\nA copy launched after the GEMM: GEMM slowdown {min(after):.3f}-{max(after):.3f} over {len(after)} pairs.")


def memory(folder):
    d = json.loads(need(folder, "torch/memory.json").read_text())
    print("\n| layers | parameters | peak allocated GB | peak reserved GB | reserved / allocated | device used GB |")
    print("|---|---|---|---|---|---|")
    for r in d["rows"]:
        print(f"| {r['layers']} | {r['params'] / 1e9:.2f} B | {r['max_allocated'] / 1e9:.1f} | {r['max_reserved'] / 1e9:.1f} "
              f"| {r['max_reserved'] / r['max_allocated']:.2f} | {r['device_used_after'] / 1e9:.1f} |")
    last = d["rows"][-1]
    print(f"\nCUDA context and workspaces before the model: {d['context_and_workspace_bytes_before_model'] / 1e9:.2f} GB;"
          f" beside the reserve after the steps: {(last['device_used_after'] - last['reserved_after']) / 1e9:.2f} GB.")


def attention(folder):
    print("\n| SDPA, 32 heads of 128 | call | forward TFLOP/s | backward TFLOP/s |")
    print("|---|---|---|---|")
    for name, call in (("torch/attention.json", "first"), ("torch/attention_second_call.json", "second")):
        if not (folder / name).exists():
            continue
        for r in json.loads((folder / name).read_text())["rows"]:
            mask = "causal" if r.get("causal", True) else "full"
            print(f"| {mask} {r['batch']} x {r['seq_len']} | {call} | {r['forward_tflops']:.0f} | {r['backward_tflops']:.0f} |")


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    folder = Path(argv[1])
    if not folder.is_dir():
        print(f"gpu_results: {folder} is not a folder", file=sys.stderr)
        return 2
    for part in (sustained, duty, window, small_kernels, copies, held_sms, memory, attention):
        part(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
