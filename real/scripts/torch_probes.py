#!/usr/bin/env python3
"""tpsim's single-GPU probes of what PyTorch itself does, beside tpsim-real's kernel measurements.

Each probe writes one JSON file (and a trace where it says) under the output folder:
  sustained   bf16 GEMMs back to back for --seconds: TFLOP/s per window beside NVML's SM clock, power,
              temperature and throttle reasons sampled during that window (sustained clock at the
              card's own power limit, against the short samples the GEMM fit uses)
  graph       the GPU time per small kernel launched eagerly and replayed from a CUDA graph, and the
              host time per eager launch
  memory      training steps of a Llama-shaped decoder stack (fp32 parameters, bf16 autocast, fused
              AdamW) at several depths: the tensors' peak (max_memory_allocated), the caching
              allocator's peak (max_memory_reserved), what the device reports used (CUDA context,
              cuBLAS workspaces), per depth, so per-layer and constant parts separate
  attention   causal SDPA (PyTorch's FlashAttention backend) forward and forward+backward at Llama-3
              head shapes (128-wide heads, GQA expanded as the traced layer does) over sequence lengths
  duty        the power-capped clock at a given duty cycle: 8192^3 bf16 GEMMs alternating with 1 GiB copies
              (or with idle gaps) at several shares of tensor-core time, 10 s each: GEMM TFLOP/s, copy
              TB/s, NVML's clock and power per mode (the clock a step settles at depends on its mix)
  trace       a PyTorch profiler trace (Kineto JSON, record_shapes) of two training steps of a
              two-layer stack, gzipped: GEMMs with their shapes, attention, pointwise kernels,
              the optimizer's kernels
  cp_blocks   the blocks PyTorch's context_parallel (all-gather rotation, round-robin halves) runs per layer
              when every GPU holds 32,768 tokens (TorchTitan's long-context rows): the causal local block and
              an unmasked block of the whole local query against half a chunk's K/V, forward and backward, and
              the fp32 merge of one block's output (_SDPAMerger.step's casts and elementwise passes)
  window      the power limiter's averaging time: 8192^3 bf16 GEMMs half of each cycle, idle the other
              half, at cycles from 4 ms to 2 s: each GEMM timed, so the phase's first and last quarters
              compare (a limiter that averages over less than a phase slows its last GEMMs to the
              back-to-back rate; over more, every GEMM runs at the rate the cycle's mean draw allows)
Needs a CUDA GPU and PyTorch; nvidia-ml-py (pynvml) for the sustained probe's clocks. Leaves the
GPU's settings alone. Usage: torch_probes.py OUT_DIR [probe ...]   (default: all eight)
"""
import gzip
import json
import math
import os
import sys
import threading
import time

import torch
import torch.nn.functional as F

PROBES = ("sustained", "graph", "memory", "trace", "attention", "duty", "window", "cp_blocks")


def write_json(out_dir, name, value):
    path = os.path.join(out_dir, name)
    with open(path, "w") as f:
        json.dump(value, f, indent=1, sort_keys=True)
    print(f"wrote {path}", flush=True)


def device_facts():
    p = torch.cuda.get_device_properties(0)
    return {"name": p.name, "sms": p.multi_processor_count, "memory_bytes": p.total_memory,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version()}


class NvmlSampler:
    """Samples SM clock, power, temperature and throttle reasons every period_s in a thread."""

    def __init__(self, period_s=0.02):
        self.period_s = period_s
        self.samples = []
        self.error = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self.limit_W = pynvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000.0
        except Exception as e:  # recorded, never fatal
            self.nvml = None
            self.error = f"NVML unavailable: {e}"
            self.limit_W = None
        self._stop = threading.Event()
        self._thread = None

    def read(self):
        n, h = self.nvml, self.handle
        try:
            reasons = n.nvmlDeviceGetCurrentClocksEventReasons(h)
        except Exception:
            reasons = n.nvmlDeviceGetCurrentClocksThrottleReasons(h)
        return (time.perf_counter(), n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
                n.nvmlDeviceGetPowerUsage(h) / 1000.0,
                n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU), int(reasons))

    def _run(self):
        while not self._stop.is_set():
            try:
                self.samples.append(self.read())
            except Exception as e:
                self.error = f"NVML read failed: {e}"
                return
            time.sleep(self.period_s)

    def start(self):
        if self.nvml:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join()

    def between(self, t0, t1):
        return [s for s in self.samples if t0 <= s[0] <= t1]


def probe_sustained(out_dir, seconds=40.0, n=8192, window_s=0.5):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    flop = 2.0 * n * n * n
    for _ in range(5):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(20):
        torch.matmul(a, b, out=c)
    e1.record()
    e1.synchronize()
    per_gemm_s = e0.elapsed_time(e1) / 1000.0 / 20
    per_window = max(1, int(window_s / per_gemm_s))
    sampler = NvmlSampler()
    idle = sampler.read() if sampler.nvml else None
    sampler.start()
    windows, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        e0.record()
        for _ in range(per_window):
            torch.matmul(a, b, out=c)
        e1.record()
        e1.synchronize()
        t1 = time.perf_counter()
        ms = e0.elapsed_time(e1)
        inside = sampler.between(t0, t1)
        row = {"t_s": round(t1 - start, 3), "gemms": per_window, "ms": ms,
               "tflops": flop * per_window / (ms / 1000.0) / 1e12}
        if inside:
            row["sm_clock_mhz"] = sum(s[1] for s in inside) / len(inside)
            row["power_W"] = sum(s[2] for s in inside) / len(inside)
            row["temperature_C"] = max(s[3] for s in inside)
            reasons = 0
            for s in inside:
                reasons |= s[4]
            row["clock_event_reasons"] = reasons
            row["nvml_samples"] = len(inside)
        windows.append(row)
    sampler.stop()
    assert torch.isfinite(c.float().sum()), "GEMM output not finite"
    write_json(out_dir, "sustained.json", {
        "probe": "sustained", "device": device_facts(), "shape": [n, n, n], "dtype": "bf16",
        "inputs": "torch.randn", "window_s": window_s, "seconds": seconds,
        "power_limit_W": sampler.limit_W, "nvml_error": sampler.error,
        "idle_before": None if idle is None else {"sm_clock_mhz": idle[1], "power_W": idle[2],
                                                  "temperature_C": idle[3]},
        "windows": windows})
    first, last = windows[0], windows[-1]
    print(f"sustained: first window {first['tflops']:.0f} TFLOP/s at {first.get('sm_clock_mhz', 0):.0f} MHz,"
          f" last {last['tflops']:.0f} at {last.get('sm_clock_mhz', 0):.0f} MHz,"
          f" {last.get('power_W', 0):.0f} W, {last.get('temperature_C', 0)} C", flush=True)


def time_events(fn, repeats=20):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / 1000.0)
    times.sort()
    return times[len(times) // 2]


def probe_graph(out_dir, kernels=1000):
    rows = []
    for numel in (1024, 1 << 20, 16 << 20):
        x = torch.randn(numel, device="cuda", dtype=torch.bfloat16)

        def chain():
            for _ in range(kernels):
                x.mul_(1.0000001)

        chain()
        torch.cuda.synchronize()
        # Host time per eager launch: the Python + dispatcher + launch path, with the GPU far behind.
        t0 = time.perf_counter()
        chain()
        host_s = (time.perf_counter() - t0) / kernels
        torch.cuda.synchronize()
        eager_s = time_events(chain, 5) / kernels
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            chain()
            torch.cuda.synchronize()
            with torch.cuda.graph(g):
                chain()
        torch.cuda.current_stream().wait_stream(s)
        graph_s = time_events(g.replay, 20) / kernels
        assert torch.isfinite(x.float().sum()), "chain output not finite"
        rows.append({"bytes_per_kernel": 2 * x.element_size() * numel, "kernels": kernels,
                     "host_per_eager_launch_us": host_s * 1e6, "gpu_per_kernel_eager_us": eager_s * 1e6,
                     "gpu_per_kernel_graph_us": graph_s * 1e6})
        print(f"graph: {rows[-1]}", flush=True)
    write_json(out_dir, "graph.json", {"probe": "graph", "device": device_facts(), "op": "x.mul_ (bf16)",
                                       "rows": rows})


class RMSNorm(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x) * self.weight


def rope(x, pos):
    d = x.shape[-1]
    inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    ang = pos[:, None].float() * inv[None, :]
    cos, sin = ang.cos().to(x.dtype)[:, None, :], ang.sin().to(x.dtype)[:, None, :]  # over heads
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Block(torch.nn.Module):
    """A Llama decoder layer as TorchTitan writes it: separate q/k/v, SDPA, SwiGLU."""

    def __init__(self, d, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.attn_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.wq = torch.nn.Linear(d, d, bias=False)
        self.wk = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wv = torch.nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wo = torch.nn.Linear(d, d, bias=False)
        self.w1 = torch.nn.Linear(d, ffn, bias=False)
        self.w3 = torch.nn.Linear(d, ffn, bias=False)
        self.w2 = torch.nn.Linear(ffn, d, bias=False)

    def forward(self, x, pos):
        b, s, _ = x.shape
        h = self.attn_norm(x)
        q = rope(self.wq(h).view(b, s, self.heads, self.hd), pos).transpose(1, 2)
        k = rope(self.wk(h).view(b, s, self.kv_heads, self.hd), pos).transpose(1, 2)
        v = self.wv(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, -1)
        x = x + self.wo(a)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Stack(torch.nn.Module):
    def __init__(self, layers, d=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList(Block(d, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.out = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, pos)
        return self.out(self.norm(x))


def train_steps(model, opt, batch, seq, steps, vocab=128256):
    for _ in range(steps):
        tokens = torch.randint(0, vocab, (batch, seq), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens)
        loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), tokens.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return float(loss)


def used_bytes():
    free, total = torch.cuda.mem_get_info()
    return total - free


def probe_memory(out_dir, depths=(1, 2, 4), batch=1, seq=8192, steps=3):
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    context_used = used_bytes() - torch.cuda.memory_reserved()
    rows = []
    for layers in depths:
        torch.manual_seed(layers)
        with torch.device("cuda"):
            model = Stack(layers)
        params = sum(p.numel() for p in model.parameters())
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
        torch.cuda.reset_peak_memory_stats()
        train_steps(model, opt, batch, seq, 1)  # the first step allocates AdamW's state
        t0 = time.perf_counter()
        loss = train_steps(model, opt, batch, seq, steps)
        step_s = (time.perf_counter() - t0) / steps
        stats = torch.cuda.memory_stats()
        row = {"layers": layers, "batch": batch, "seq_len": seq, "params": params,
               "param_bytes_fp32": 4 * params, "steps": steps, "timed_after_warmup_steps": 1, "loss": loss, "seconds_per_step": step_s,
               "max_allocated": torch.cuda.max_memory_allocated(),
               "max_reserved": torch.cuda.max_memory_reserved(),
               "allocated_after": torch.cuda.memory_allocated(),
               "reserved_after": torch.cuda.memory_reserved(),
               "device_used_after": used_bytes(),
               "alloc_retries": stats.get("num_alloc_retries", 0),
               "inactive_split_bytes_peak": stats.get("inactive_split_bytes.all.peak", 0),
               "segments_peak": stats.get("segment.all.peak", 0)}
        assert math.isfinite(loss), "loss not finite"
        rows.append(row)
        print(f"memory: layers {layers}: allocated {row['max_allocated'] / 2**30:.2f} GiB, reserved "
              f"{row['max_reserved'] / 2**30:.2f} GiB, device used {row['device_used_after'] / 2**30:.2f} GiB,"
              f" {step_s * 1e3:.0f} ms/step", flush=True)
        del model, opt
        torch.cuda.empty_cache()
    write_json(out_dir, "memory.json", {
        "probe": "memory", "device": device_facts(),
        "model": "Llama-3-8B dimensions (d 4096, 32 heads, 8 KV heads, ffn 14336, vocab 128256), separate q/k/v",
        "recipe": "fp32 parameters, torch.autocast bf16, fused AdamW, SDPA causal, no recomputation",
        "context_and_workspace_bytes_before_model": context_used,
        "allocator_env": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "rows": rows})


def probe_trace(out_dir, layers=2, batch=1, seq=8192, warm_s=5.0):
    from torch.profiler import ProfilerActivity, profile
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Stack(layers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    # Steps for warm_s first: the power limiter settles within about a second of load (sustained.json's first
    # half second ran 13% below one GEMM alone), and the trace should show the steady clock a training run holds.
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm_s:
        train_steps(model, opt, batch, seq, 2)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 with_stack=False) as prof:
        train_steps(model, opt, batch, seq, 2)
    raw = os.path.join(out_dir, "trace_llama8b_2layers.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb", compresslevel=9) as dst:
        dst.write(src.read())
    os.remove(raw)
    print(f"wrote {raw}.gz ({os.path.getsize(raw + '.gz')} bytes)", flush=True)


def probe_attention(out_dir, heads=32, hd=128, tokens=32768):
    rows = []
    for causal, seq in [(True, n) for n in (1024, 2048, 4096, 8192, 16384)] + [(False, n) for n in (1024, 4096, 8192)]:
        b = max(1, tokens // seq)
        q, k, v = (torch.randn(b, heads, seq, hd, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        g = torch.randn(b, heads, seq, hd, device="cuda", dtype=torch.bfloat16)

        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        def fwd_bwd():
            o = fwd()
            o.backward(g)

        for _ in range(3):
            fwd_bwd()
        fwd_s, both_s = time_events(fwd, 10), time_events(fwd_bwd, 10)
        flop = 4.0 * b * heads * seq * seq * hd / (2 if causal else 1)  # QK^T and PV (lower triangle if causal)
        row = {"batch": b, "heads": heads, "head_dim": hd, "seq_len": seq, "causal": causal,
               "forward_ms": fwd_s * 1e3, "forward_backward_ms": both_s * 1e3, "forward_flop": flop,
               "forward_tflops": flop / fwd_s / 1e12, "backward_tflops": 2.5 * flop / (both_s - fwd_s) / 1e12}
        assert torch.isfinite(q.grad.float().sum()), "attention gradient not finite"
        rows.append(row)
        print(f"attention: {'causal' if causal else 'full'} seq {seq} x {b}: forward {row['forward_tflops']:.0f} TFLOP/s, backward "
              f"{row['backward_tflops']:.0f} (2.5x forward FLOPs)", flush=True)
        del q, k, v, g
    write_json(out_dir, "attention.json", {"probe": "attention", "device": device_facts(),
                                           "op": "F.scaled_dot_product_attention, bf16, causal and full",
                                           "backend": "PyTorch's default choice (flash on Hopper)",
                                           "rows": rows})


def sdpa_block_row(queries, keys, causal, heads, hd):
    """One SDPA block of `queries` against `keys` (one sequence of `heads` 128-wide heads), forward and
    forward+backward, timed as probe_attention times them; FLOPs over the (query, key) pairs the mask keeps."""
    q = torch.randn(1, heads, queries, hd, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(1, heads, keys, hd, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    g = torch.randn(1, heads, queries, hd, device="cuda", dtype=torch.bfloat16)

    def fwd():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def fwd_bwd():
        fwd().backward(g)

    for _ in range(3):
        fwd_bwd()
    fwd_s, both_s = time_events(fwd, 10), time_events(fwd_bwd, 10)
    pairs = queries * keys / 2.0 if causal else queries * keys
    flop = 4.0 * heads * pairs * hd
    assert torch.isfinite(q.grad.float().sum()), "attention gradient not finite"
    return {"queries": queries, "keys": keys, "heads": heads, "head_dim": hd, "causal": causal,
            "forward_ms": fwd_s * 1e3, "backward_ms": (both_s - fwd_s) * 1e3, "forward_flop": flop,
            "forward_tflops": flop / fwd_s / 1e12, "backward_tflops": 2.5 * flop / (both_s - fwd_s) / 1e12}


def probe_cp_blocks(out_dir, heads=32, hd=128, local=32768):
    # Every CP rank of TorchTitan's long-context rows holds `local` tokens: step 0 a causal block over them, every
    # later step an unmasked block of the whole local query against the first half of a rank's K/V (or half the
    # query against all of it: the same FLOPs), 32 heads (K/V repeated to the query heads before SDPA).
    rows = [sdpa_block_row(local, local, True, heads, hd), sdpa_block_row(local, local // 2, False, heads, hd)]
    for r in rows:
        print(f"cp_blocks: {'causal' if r['causal'] else 'unmasked'} {r['queries']} x {r['keys']}: forward "
              f"{r['forward_tflops']:.0f} TFLOP/s ({r['forward_ms']:.1f} ms), backward {r['backward_tflops']:.0f} "
              f"({r['backward_ms']:.1f} ms)", flush=True)
    # _SDPAMerger.step on one block: the block's output cast to fp32, then out - sigmoid(block_lse - lse) *
    # (out - block_out) and lse - logsigmoid(lse - block_lse), eager kernels over fp32 tensors.
    out = torch.randn(1, heads, local, hd, device="cuda", dtype=torch.float32)
    lse = torch.randn(1, heads, local, 1, device="cuda", dtype=torch.float32)
    block_out = torch.randn(1, heads, local, hd, device="cuda", dtype=torch.bfloat16)
    block_lse = torch.randn(1, heads, local, 1, device="cuda", dtype=torch.float32)

    def merge():
        b = block_out.to(torch.float32)
        new_out = out - torch.sigmoid(block_lse - lse) * (out - b)
        new_lse = lse - F.logsigmoid(lse - block_lse)
        return new_out, new_lse

    for _ in range(3):
        merge()
    merge_s = time_events(merge, 10)
    print(f"cp_blocks: one block's fp32 merge {merge_s * 1e3:.2f} ms", flush=True)
    write_json(out_dir, "cp_blocks.json", {"probe": "cp_blocks", "device": device_facts(),
                                           "op": "F.scaled_dot_product_attention, bf16, one sequence; fp32 merge",
                                           "backend": "PyTorch's default choice (flash on Hopper)",
                                           "local_tokens": local, "blocks": rows, "merge_ms": merge_s * 1e3})


def probe_duty(out_dir, n=8192, seconds=10.0, cycle_s=0.02):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    src = torch.randn(1 << 29, device="cuda", dtype=torch.bfloat16)  # 1 GiB
    dst = torch.empty_like(src)
    flop, copy_bytes = 2.0 * n * n * n, 2 * src.numel() * src.element_size()
    gemm_s = time_events(lambda: torch.matmul(a, b, out=c), 10)
    copy_s = time_events(lambda: dst.copy_(src), 10)
    sampler = NvmlSampler()
    sampler.start()
    modes = [("copy", 0.25), ("copy", 0.5), ("copy", 0.75), ("idle", 0.25), ("idle", 0.5)]
    rows = []
    e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
    for partner, share in modes:
        gemms = max(1, round(share * cycle_s / gemm_s))
        other_s = gemms * gemm_s * (1 - share) / share
        copies = max(1, round(other_s / copy_s)) if partner == "copy" else 0
        cycles, start = [], time.perf_counter()
        while time.perf_counter() - start < seconds:
            t0 = time.perf_counter()
            e[0].record()
            for _ in range(gemms):
                torch.matmul(a, b, out=c)
            e[1].record()
            for _ in range(copies):
                dst.copy_(src)
            e[2].record()
            e[2].synchronize()
            if partner == "idle":
                time.sleep(other_s)
            cycles.append((t0, time.perf_counter(), e[0].elapsed_time(e[1]) / 1e3, e[1].elapsed_time(e[2]) / 1e3))
        steady = [x for x in cycles if x[0] - start >= seconds / 2]
        t_first, t_last = steady[0][0], steady[-1][1]
        inside = sampler.between(t_first, t_last)
        g = statistics_median([x[2] for x in steady])
        o = statistics_median([x[3] for x in steady])
        wall = (t_last - t_first) / len(steady)
        row = {"partner": partner, "target_share": share, "gemms_per_cycle": gemms, "copies_per_cycle": copies,
               "cycle_wall_s": wall, "tensor_share": g / wall, "gemm_tflops": flop * gemms / g / 1e12,
               "copy_TBps": copy_bytes * copies / o / 1e12 if copies else None}
        if inside:
            row["sm_clock_mhz"] = statistics_median([s[1] for s in inside])
            row["power_W"] = statistics_median([s[2] for s in inside])
            row["temperature_C"] = max(s[3] for s in inside)
            row["nvml_samples"] = len(inside)
        rows.append(row)
        print(f"duty: {partner} {share}: tensor share {row['tensor_share']:.2f}, GEMM {row['gemm_tflops']:.0f} TFLOP/s,"
              f" {row.get('sm_clock_mhz', 0):.0f} MHz, {row.get('power_W', 0):.0f} W", flush=True)
    sampler.stop()
    assert torch.isfinite(c.float().sum()) and torch.equal(dst[:1024], src[:1024]), "duty outputs wrong"
    write_json(out_dir, "duty.json", {"probe": "duty", "device": device_facts(), "gemm_shape": [n, n, n],
                                      "share_definition": "GEMM phase time / cycle wall time",
                                      "copy_bytes_read_plus_written": copy_bytes, "seconds_per_mode": seconds,
                                      "gemm_alone_s": gemm_s, "copy_alone_s": copy_s,
                                      "power_limit_W": sampler.limit_W, "nvml_error": sampler.error, "rows": rows})


def probe_window(out_dir, n=8192, cycles_s=(0.004, 0.04, 0.4, 2.0), seconds=8.0):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    flop = 2.0 * n * n * n
    gemm_s = time_events(lambda: torch.matmul(a, b, out=c), 10)
    sampler = NvmlSampler()
    sampler.start()
    rows = []
    for cycle_s in cycles_s:
        gemms = max(1, round(0.5 * cycle_s / gemm_s))
        idle_s = gemms * gemm_s  # a GEMM share of one half
        events = [torch.cuda.Event(enable_timing=True) for _ in range(gemms + 1)]
        phases, start = [], time.perf_counter()
        while time.perf_counter() - start < max(seconds, 4 * cycle_s):
            t0 = time.perf_counter()
            events[0].record()
            for i in range(gemms):
                torch.matmul(a, b, out=c)
                events[i + 1].record()
            events[-1].synchronize()
            times = [events[i].elapsed_time(events[i + 1]) / 1e3 for i in range(gemms)]
            time.sleep(idle_s)
            phases.append((t0, time.perf_counter(), times))
        steady = [p for p in phases if p[0] - start >= min(seconds, 4 * cycle_s) / 2] or phases[-1:]
        quarter = max(1, gemms // 4)

        def rate(ts):
            return flop / statistics_median(ts)

        row = {"cycle_s": cycle_s, "gemms_per_phase": gemms, "idle_s": idle_s, "phases": len(steady),
               "gemm_tflops": rate([t for p in steady for t in p[2]]) / 1e12,
               "first_quarter_tflops": rate([t for p in steady for t in p[2][:quarter]]) / 1e12,
               "last_quarter_tflops": rate([t for p in steady for t in p[2][-quarter:]]) / 1e12}
        inside = sampler.between(steady[0][0], steady[-1][1])
        if inside:
            row["sm_clock_mhz"] = statistics_median([s[1] for s in inside])
            row["power_W"] = statistics_median([s[2] for s in inside])
            row["nvml_samples"] = len(inside)
        rows.append(row)
        print(f"window: cycle {cycle_s * 1e3:.0f} ms: GEMM {row['gemm_tflops']:.0f} TFLOP/s (first quarter "
              f"{row['first_quarter_tflops']:.0f}, last {row['last_quarter_tflops']:.0f})", flush=True)
    sampler.stop()
    assert torch.isfinite(c.float().sum()), "window outputs wrong"
    write_json(out_dir, "window.json", {"probe": "window", "device": device_facts(), "gemm_shape": [n, n, n],
                                        "gemm_alone_s": gemm_s, "gemm_share": 0.5, "power_limit_W": sampler.limit_W,
                                        "nvml_error": sampler.error, "rows": rows})


def statistics_median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, probes = argv[1], argv[2:] or list(PROBES)
    bad = [p for p in probes if p not in PROBES]
    if bad:
        print(f"unknown probe {bad[0]}; probes: {', '.join(PROBES)}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("no CUDA device: nothing measured", file=sys.stderr)
        return 3
    os.makedirs(out_dir, exist_ok=True)
    status = 0
    for name in probes:
        t0 = time.perf_counter()
        try:
            globals()["probe_" + name](out_dir)
        except Exception as e:  # one probe's failure is recorded; the others still run
            print(f"probe {name} failed: {type(e).__name__}: {e}", flush=True)
            status = 1
        print(f"== probe {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
