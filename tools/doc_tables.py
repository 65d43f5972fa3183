#!/usr/bin/env python3
"""Prints one of the markdown tables that README.md and docs/*.md quote, from tpsim runs of the shipped
scenarios or from `tpsim calibrate report` on the shipped measurement files.

  tools/doc_tables.py TABLE      (tpsim: $TPSIM, else build/cli/tpsim)

The docs name the command above each table (`<!-- output of: tools/doc_tables.py TABLE -->`);
tools/doc_outputs.py checks that they still agree.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TPSIM = os.environ.get("TPSIM", str(ROOT / "build/cli/tpsim"))
MEASUREMENTS = "calibrate/data/measurements/"


def tpsim(*args):
    return subprocess.run([TPSIM, *args], cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout


def shipped(name):
    """The path of the shipped scenario NAME (scenarios/TOPIC/NAME.yaml), relative to the repository."""
    (path,) = (ROOT / "scenarios").glob(f"*/{name}.yaml")
    return str(path.relative_to(ROOT))


def results(scenario):
    """The JSON of `tpsim run` on scenarios/TOPIC/SCENARIO.yaml, or on SCENARIO where it is a path to a .yaml file."""
    path = scenario if scenario.endswith(".yaml") else shipped(scenario)
    return json.loads(tpsim("run", path, "--json", "-"))


def results_of(scenarios):
    """results() of each scenario, run side by side."""
    with concurrent.futures.ThreadPoolExecutor() as pool:
        return list(pool.map(results, scenarios))


def by_variant(rows):
    return {r["variant"]: r for r in rows}


def ms(seconds, digits=1):
    return f"{seconds * 1e3:.{digits}f}"


def gib(size):
    return f"{size / 2**30:.1f}"


def header(*columns):
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def row(*cells):
    print("| " + " | ".join(str(c) for c in cells) + " |")


def generate():
    header("model, batch", "variant", "TTFT ms", "TPOT ms", "tokens/s", "exposed comm ms", "speedup",
           "TPOT gap to nocomm closed")
    runs = [("70B", 1), ("70B", 8), ("70B", 32), ("8B", 1), ("8B", 32)]
    for (model, batch), d in zip(runs, results_of(f"llama3-{m.lower()}-tp8-generate-b{b}" for m, b in runs)):
        tp, nocomm = by_variant(d["results"])["tp"]["tpot_s"], by_variant(d["results"])["nocomm"]["tpot_s"]
        for i, r in enumerate(d["results"]):
            exposed = ms(r["exposed_comm_s"]) if r["exposed_comm_s"] > 0 else "0"
            closed = f"{100 * (tp - r['tpot_s']) / (tp - nocomm):.0f}%" if r["variant"] != "tp" else ""
            row(f"{model}, {batch}" if i == 0 else "", r["variant"], ms(r["ttft_s"]), ms(r["tpot_s"], 3),
                f"{r['tokens_per_s']:.0f}", exposed, f"{r['speedup']:.3f}x", closed)


def decode_delta():
    header("model", "collective", "tp", "dtp1", "dtp2", "dtp4", "nocomm")
    models = ["qwen3-0.6b", "danube3-500m"]
    with tempfile.TemporaryDirectory() as scratch:
        one_shot = []  # the same scenarios with every variant's all-reduces run as custom one-shot kernels
        for model in models:
            text = (ROOT / f"scenarios/inference/{model}-tp4-decode-delta.yaml").read_text()
            one_shot.append(f"{scratch}/{model}-one-shot.yaml")
            Path(one_shot[-1]).write_text(re.sub(r"tp_mode: (\w+)", r"tp_mode: \1, collective: one_shot", text))
        runs = results_of([f"{model}-tp4-decode-delta" for model in models] + one_shot)
    for d, collective in zip(runs, ["nccl"] * len(models) + ["one_shot"] * len(models)):
        row(d["scenario"]["model"]["name"], collective, *(ms(r["tpot_s"], 3) for r in d["results"]))


def prefill():
    header("prompt tokens", "tp ms", "all-reduce (exposed) ms", "all-reduce share", "nocomm ms")
    points = {}
    for r in results("llama3-70b-tp8-prefill-sweep")["results"]:
        points.setdefault(int(r["point"]["workload.seq_len"]), {})[r["variant"]] = r
    for tokens, v in points.items():
        tp, nocomm = v["tp"], v["nocomm"]
        share = f"{100 * tp['exposed_comm_s'] / tp['time_s']:.0f}%"
        row(f"{tokens:,}", ms(tp["time_s"]), ms(tp["exposed_comm_s"]), share, ms(nocomm["time_s"]))


def published():
    # Published: the async-TP feature request (shared/seeds), quoting TorchTitan on 8 H100s: "up to ~29%"
    # forward speedup for Llama-3-8B and ~20% for Llama-3-70B over SP.
    header("model", "sp ms", "async (8 chunks, copy engine) ms", "predicted speedup", "published", "nocomm ceiling")
    models = [("8b", "Llama-3.1-8B", "~1.29x"), ("70b", "Llama-3.1-70B", "~1.20x")]
    for (model, label, quoted), d in zip(models, results_of(f"llama3-{m}-tp8-forward" for m, _, _ in models)):
        v = by_variant(d["results"])
        layers = d["scenario"]["model"]["num_hidden_layers"]
        row(f"{label}, {layers} layers", ms(v["sp"]["time_s"]), ms(v["async"]["time_s"]),
            f"**{v['async']['speedup']:.2f}x**", quoted, f"{v['nocomm']['speedup']:.2f}x")


def torchtitan():
    # Published: TorchTitan's async-TP post, Figure 9 (shared data async_tp_torchtitan.csv), forward ms.
    published = {("8b", 8): (597, 464), ("8b", 12): (880, 678), ("70b", 4): (1937, 1610), ("70b", 8): (3765, 3124),
                 ("70b", 12): (5629, 4724)}
    header("TorchTitan, TP=8, 8192 tokens", "sp ms", "published", "error", "async ms", "published", "error",
           "speedup", "published", "difference")
    for model, label in [("8b", "Llama-3-8B"), ("70b", "Llama-3-70B")]:
        d = results(f"torchtitan-llama3-{model}-tp8-forward")
        for batch in sorted({int(r["point"]["workload.batch"]) for r in d["results"]}):
            v = {r["variant"]: r for r in d["results"] if int(r["point"]["workload.batch"]) == batch}
            sp, asy = v["sp"]["time_s"] * 1e3, v["async"]["time_s"] * 1e3
            psp, pasy = published[(model, batch)]
            row(f"{label}, batch {batch}", f"{sp:.0f}", psp, f"{100 * (sp / psp - 1):+.0f}%", f"{asy:.0f}", pasy,
                f"{100 * (asy / pasy - 1):+.0f}%", f"**{sp / asy:.3f}x**", f"{psp / pasy:.3f}x",
                f"{sp / asy - psp / pasy:+.3f}")


def torchtitan_train():
    # Published: TorchTitan's async-TP benchmark of June 2025 (pytorch/torchtitan
    # benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md), average tokens/s per GPU, sp then async.
    published = {("8b", "bf16"): (4378, 4809.4), ("8b", "tensorwise"): (5078.1, 5570.1),
                 ("8b", "rowwise"): (3708.5, 3914.9), ("70b", "bf16"): (597.3, 652.4),
                 ("70b", "tensorwise"): (809.8, 942.4), ("70b", "rowwise"): (599.6, 624.8)}
    jobs = {"8b": ("Llama-3.1-8B, 64 H100, FSDP 8 x TP 8, per-op SAC, 12 x 8192", "torchtitan-llama3-8b-tp8-fsdp8-train"),
            "70b": ("Llama-3.1-70B, 256 H100, FSDP 32 x TP 8, full AC, 16 x 8192",
                    "torchtitan-llama3-70b-tp8-fsdp32-train")}
    header("TorchTitan, June 2025", "dtype", "sp tok/s/GPU", "published", "error", "async tok/s/GPU", "published",
           "error", "step gain", "published", "difference")
    for model, (label, scenario) in jobs.items():
        runs = [("bf16", r) for r in results(scenario)["results"]]
        runs += [(r["point"]["workload.fp8_recipe"], r) for r in results(scenario + "-fp8")["results"]]
        for dtype in ["bf16", "tensorwise", "rowwise"]:
            v = {r["variant"]: r for d, r in runs if d == dtype}
            sp, asy = v["sp"]["tokens_per_s_per_gpu"], v["async"]["tokens_per_s_per_gpu"]
            psp, pasy = published[(model, dtype)]
            row(label if dtype == "bf16" else "", dtype if dtype == "bf16" else f"fp8 {dtype}", f"{sp:.0f}",
                f"{psp:g}", f"{100 * (sp / psp - 1):+.0f}%", f"{asy:.0f}", f"{pasy:g}", f"{100 * (asy / pasy - 1):+.0f}%",
                f"**{asy / sp:.3f}x**", f"{pasy / psp:.3f}x", f"{asy / sp - pasy / psp:+.3f}")


def gpt_fast():
    # Published: gpt-fast's README (decode_tp_gpt_fast.csv, copied under calibrate/data/public), tokens/s.
    import csv
    with open(ROOT / "calibrate/data/public/decode_tp_gpt_fast.csv", newline="") as f:
        published = {(r["model"], int(r["gpus"])): float(r["tokens_per_s"]) for r in csv.DictReader(f)}
    header("gpt-fast, A100 at 330 W, batch 1", "TP", "published tokens/s", "predicted", "error",
           "with NCCL's all-reduce")
    for model, scenario in [("Llama-2-7B", "gpt-fast-llama2-7b-decode"), ("Llama-2-70B", "gpt-fast-llama2-70b-decode")]:
        d = results(scenario)
        for tp in sorted({int(r["point"]["parallelism.tp"]) for r in d["results"]}):
            v = {r["variant"]: r for r in d["results"] if int(r["point"]["parallelism.tp"]) == tp}
            predicted, nccl = v["intra_node"]["tokens_per_s"], v["nccl"]["tokens_per_s"]
            measured = published[(model, tp)]
            row(model if tp == min(t for m, t in published if m == model) else "", tp, f"{measured:.1f}",
                f"{predicted:.1f}", f"{100 * (predicted / measured - 1):+.1f}%", f"{nccl:.1f}")


# The traced layer's rows (async_tp_trace_layer.csv, ms) and the ops of GPU 0 that stand for each: a row
# is the sum of its ops' durations, or (blocks of async TP) the span from its first op's start to its
# last op's end.
TRACED_SP = [("NCCL all-gather (attention)", 5.49, ["attn.qkv_proj.all_gather"]),
             ("layout copy after it", 1.95, ["attn.qkv_proj.all_gather.layout_copy"]),
             ("q, k, v GEMMs", 5.53, ["attn.qkv_proj.q", "attn.qkv_proj.k", "attn.qkv_proj.v"]),
             ("RoPE in fp32 and repeat_kv", 1.45, ["attn.rope.to_fp32", "attn.rope.rotate", "attn.rope.to_bf16",
                                                   "attn.repeat_kv"]),
             ("FlashAttention-2 forward", 7.16, ["attn.core"]),
             ("wo GEMM", 2.94, ["attn.o_proj"]),
             ("layout copy before the reduce-scatter", 1.95, ["attn.o_proj.reduce_scatter.layout_copy"]),
             ("NCCL reduce-scatter (attention)", 6.06, ["attn.o_proj.reduce_scatter"]),
             ("residual add + RMSNorm", 0.43, ["attn.residual", "ffn.norm"]),
             ("NCCL all-gather (FFN)", 5.35, ["ffn.gate_up_proj.all_gather"]),
             ("layout copy after it", 1.81, ["ffn.gate_up_proj.all_gather.layout_copy"]),
             ("w1 and w3 GEMMs", 21.55, ["ffn.gate_up_proj.gate", "ffn.gate_up_proj.up"]),
             ("SiLU * mul", 1.20, ["ffn.swiglu"]),
             ("w2 GEMM", 10.63, ["ffn.down_proj"]),
             ("layout copy before the reduce-scatter", 2.09, ["ffn.down_proj.reduce_scatter.layout_copy"]),
             ("NCCL reduce-scatter (FFN)", 5.85, ["ffn.down_proj.reduce_scatter"])]
TRACED_ASYNC = [("fused all-gather + q/k/v matmul", 8.59, ("attn.qkv_proj.ag.barrier", "attn.qkv_proj.ag.closing_barrier")),
                ("RoPE in fp32 and repeat_kv", 1.41, ("attn.rope.to_fp32", "attn.repeat_kv")),
                ("FlashAttention-2 forward", 8.06, ("attn.core", "attn.core")),
                ("fused wo matmul + reduce-scatter", 6.89, ("attn.o_proj.piece0", "attn.o_proj.rs.reduce")),
                ("residual + norm", 0.39, ("attn.residual", "ffn.norm")),
                ("fused all-gather + w1/w3 matmul", 23.42, ("ffn.gate_up_proj.ag.barrier",
                                                            "ffn.gate_up_proj.ag.closing_barrier")),
                ("SiLU * mul", 1.10, ("ffn.swiglu", "ffn.swiglu")),
                ("fused w2 matmul + reduce-scatter", 13.42, ("ffn.down_proj.piece0", "ffn.down_proj.rs.reduce"))]


def traced_spans(scenario="scenarios/published/torchtitan-llama3-70b-traced-layer.yaml"):
    """(GPU 0's variant pid, op name without "L0.") -> (start ms, end ms) of the traced layer's run."""
    trace = json.loads(tpsim("run", scenario, "-q", "--trace", "-"))
    spans = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e["pid"] in (0, 1000) and e["name"].startswith("L0."):
            spans[(e["pid"], e["name"][3:])] = (e["ts"] / 1e3, (e["ts"] + e["dur"]) / 1e3)
    return spans


def sp_row_ms(spans, ops):
    """A TRACED_SP row's prediction: the sum of its ops' durations on GPU 0's sp variant."""
    return sum(spans[(0, op)][1] - spans[(0, op)][0] for op in ops)


def traced_layer():
    spans = traced_spans()
    header("variant", "traced kernel or block", "traced ms", "predicted ms", "error")
    for label, traced, ops in TRACED_SP:
        predicted = sp_row_ms(spans, ops)
        row("sp", label, f"{traced:.2f}", f"{predicted:.2f}", f"{100 * (predicted / traced - 1):+.0f}%")
    for label, traced, (first, last) in TRACED_ASYNC:
        predicted = spans[(1000, last)][1] - spans[(1000, first)][0]
        row("async", label, f"{traced:.2f}", f"{predicted:.2f}", f"{100 * (predicted / traced - 1):+.0f}%")
    layer = {pid: max(end for (p, _), (_, end) in spans.items() if p == pid) -
             min(start for (p, _), (start, _) in spans.items() if p == pid) for pid in (0, 1000)}
    row("sp", "whole layer", "82.56", f"{layer[0]:.2f}", f"{100 * (layer[0] / 82.56 - 1):+.0f}%")
    row("async", "whole layer", "63.77", f"{layer[1000]:.2f}", f"{100 * (layer[1000] / 63.77 - 1):+.0f}%")
    row("", "speedup", "1.295x", f"{layer[0] / layer[1000]:.3f}x", "")


def traced_batch():
    # The traced layer's sp kernels at each batch near the inferred one: the error of each kind of kernel (the
    # geometric mean over its rows) and the root mean square of every row's log error.
    import math
    kinds = {"NCCL collectives": ("NCCL",), "layout copies": ("layout copy",),
             "GEMMs and attention": ("GEMM", "FlashAttention"),
             "pointwise kernels": ("RoPE", "residual add", "SiLU")}
    text = (ROOT / "scenarios/published/torchtitan-llama3-70b-traced-layer.yaml").read_text()
    header("batch", *kinds, "rms log error")
    with tempfile.TemporaryDirectory() as folder:
        for batch in range(13, 18):
            path = Path(folder) / f"batch{batch}.yaml"
            path.write_text(text.replace("batch: 16,", f"batch: {batch},"))
            spans = traced_spans(str(path))
            errors = {}
            for label, traced, ops in TRACED_SP:
                predicted = sp_row_ms(spans, ops)
                kind = next(k for k, words in kinds.items() if any(w in label for w in words))
                errors.setdefault(kind, []).append(math.log(predicted / traced))
            every = [e for row in errors.values() for e in row]
            row(batch, *(f"{100 * (math.exp(sum(errors[k]) / len(errors[k])) - 1):+.0f}%" for k in kinds),
                f"{math.sqrt(sum(e * e for e in every) / len(every)):.3f}")


def train():
    # Published: TorchTitan's async-TP runs (shared/data/async_tp_torchtitan.csv), local batch 8 x 8192 tokens,
    # TP=8: words per second per GPU 4401 (SP) and 4725 (async) for Llama3-8B, 600 and 653 for Llama3-70B; a step
    # of 65536 tokens per TP group takes 65536 / (8 x wps) seconds. The forward times are the table's.
    header("batch 8 x 8192, TP=8", "sp", "async", "async gain", "published sp", "published async", "published gain")
    published = {"8b": (597, 464, 4401, 4725, "25.8%", "27.7%"), "70b": (3765, 3124, 600, 653, "29.2%", "31.8%")}
    for model, label, recompute in [("8b", "Llama-3.1-8B", ""), ("70b", "Llama-3.1-70B", ", full recomputation")]:
        step = by_variant(results(f"llama3-{model}-tp8-train")["results"])
        forward = by_variant(results(f"llama3-{model}-tp8-forward")["results"])
        fwd_sp, fwd_async, wps_sp, wps_async, mfu_sp, mfu_async = published[model]
        published_sp, published_async = 65536 / (8 * wps_sp), 65536 / (8 * wps_async)
        row(f"{label} forward ms", ms(forward["sp"]["time_s"]), ms(forward["async"]["time_s"]),
            f"{forward['sp']['time_s'] / forward['async']['time_s']:.2f}x", str(fwd_sp), str(fwd_async),
            f"{fwd_sp / fwd_async:.2f}x")
        row(f"{label} step ms (forward, backward{recompute}, AdamW)", ms(step["sp"]["time_s"]),
            ms(step["async"]["time_s"]), f"**{step['sp']['time_s'] / step['async']['time_s']:.2f}x**",
            ms(published_sp), ms(published_async), f"{published_sp / published_async:.2f}x")
        row(f"{label} MFU", f"{100 * step['sp']['mfu']:.1f}%", f"{100 * step['async']['mfu']:.1f}%", "", mfu_sp,
            mfu_async, "")


def train_recipes():
    # The shipped training steps side by side: recomputation and fp8 against the plain bf16 step.
    header("training step, TP=8 on H100", "sp ms", "async ms", "async gain", "recompute ms (sp)", "sp MFU",
           "memory GiB (sp)")
    steps = [("llama3-8b-tp8-train", "Llama-3.1-8B, 8 x 8192, bf16, no recomputation"),
             ("llama3-8b-tp8-train-fp8", "Llama-3.1-8B, 8 x 8192, fp8 tensorwise, selective"),
             ("qwen3-8b-tp8-train-selective", "Qwen3-8B, 2 x (4 x 8192), bf16, selective"),
             ("llama3-70b-tp8-train", "Llama-3.1-70B, 8 x 8192, bf16, full")]
    for (_, label), d in zip(steps, results_of(name for name, _ in steps)):
        v = by_variant(d["results"])
        sp, fast = v["sp"], v["async"]
        row(label, ms(sp["time_s"]), ms(fast["time_s"]), f"{sp['time_s'] / fast['time_s']:.2f}x",
            ms(sp["stages"].get("recompute_s", 0.0)), f"{100 * sp['mfu']:.1f}%", gib(sp["memory_per_gpu_bytes"]))


def train_dtp():
    names = ["tp", "sp", "dtp1", "dtp2", "nocomm"]
    header("Qwen3-0.6B step, TP=4 on H200", *names)
    v = by_variant(results("qwen3-0.6b-tp4-train-dtp")["results"])
    row("step ms", *(ms(v[n]["time_s"]) for n in names))
    row("speedup over tp", *(f"{v[n]['speedup']:.2f}x" for n in names))
    row("exposed communication ms", *(ms(v[n]["exposed_comm_s"]) for n in names))


def gpu_generations():
    header("GPU", "sp ms", "async-ce", "dtp1", "nocomm")
    points = {}
    for r in results("llama3-70b-tp8-gpu-generations")["results"]:
        points.setdefault(r["point"]["hardware.gpu"], {})[r["variant"]] = r
    for gpu, v in points.items():
        row(gpu, ms(v["sp"]["time_s"], 2), *(f"{v[name]['speedup']:.2f}x" for name in ["async-ce", "dtp1", "nocomm"]))


MODES = ["nccl-tests", "torch", "graph"]


def predicted_points(gpu, kind, low, high, mode):
    """`tpsim predict collective` over 8 GPUs of GPU, NCCL's choice, LOW to HIGH by doubling, as MODE times a call."""
    out = json.loads(tpsim("predict", "collective", "--gpu", gpu, "--ranks", "8", "--kind", kind, "-b", low, "-e",
                           high, "-f", "2", "--json", "--as-called", mode))
    return {p["bytes"]: p for p in out.get("points", [out])}


def nccl_modes():
    """Every 8-GPU NCCL row of the H100 and H200 files against `predict collective` in each --as-called mode, the
    mode that matches how the row was timed (its timed_as) in bold."""
    header("file", "collective", "bytes", "timed as", "measured us", *(f"{m} us (error)" for m in MODES))
    for file, gpu, low, high in [("collectives_h100_latency", "h100-sxm", "1MiB", "512MiB"),
                                 ("allreduce_h200_busbw", "h200-sxm", "32KiB", "16GiB")]:
        rows = [json.loads(line) for line in open(ROOT / MEASUREMENTS / (file + ".jsonl"))]
        rows = [r for r in rows if r["algorithm"] != "multimem" and r["ranks"] == 8]
        kinds = sorted({r["collective"] for r in rows})
        jobs = [(kind, mode) for kind in kinds for mode in MODES]
        with concurrent.futures.ThreadPoolExecutor() as pool:
            sweeps = dict(zip(jobs, pool.map(lambda j: predicted_points(gpu, j[0], low, high, j[1]), jobs)))
        for r in rows:
            cells = []
            for mode in MODES:
                t = sweeps[(r["collective"], mode)][r["bytes"]]["time_s"]
                cell = f"{t * 1e6:.1f} ({(t / r['median_s'] - 1) * 100:+.1f}%)"
                cells.append(f"**{cell}**" if mode == r["timed_as"] else cell)
            row(file + ".csv", r["collective"], int(r["bytes"]), r["timed_as"], f"{r['median_s'] * 1e6:.1f}", *cells)


def report_h100():
    """The report of the H100 fit: fitted on the H100 rows, every other GPU's rows held out."""
    fit = ["gemm_h100_bf16", "collectives_h100_latency", "small_allreduce_h100", "p2p_bandwidth",
           "allreduce_multinode_busbw"]
    validate = ["allreduce_h200_busbw", "nvls_vs_ring_h200", "nvls_vs_ring_b200"]
    return tpsim("calibrate", "report", *(MEASUREMENTS + f + ".jsonl" for f in fit), "--base", "none",
                 "--validate-only", *(MEASUREMENTS + f + ".jsonl" for f in validate), "--measured-on", "h100-sxm")


def report_h200():
    """The report of the h200 profile's own fit over the H100 fit."""
    return tpsim("calibrate", "report", MEASUREMENTS + "allreduce_h200_busbw.jsonl",
                 MEASUREMENTS + "nvls_vs_ring_h200.jsonl", "--measured-on", "h200-sxm", "--base",
                 "scenarios/presets/profiles/h100-sxm.yaml")


def validation_h100():
    sys.stdout.write(report_h100())


def validation_h200():
    sys.stdout.write(re.sub(r"^### ", "#### ", report_h200(), flags=re.M))  # under its section heading


def validation_summary():
    """One row per table of both reports: its points and its error line."""
    header("fit", "table", "points", "in-sample mean", "max", "held-out mean", "max")
    with concurrent.futures.ThreadPoolExecutor() as pool:
        reports = list(pool.map(lambda report: report(), [report_h100, report_h200]))
    for fit, report in zip(["H100", "h200"], reports):
        for table in report.split("### ")[1:]:
            title, body = table.split("\n", 1)
            points = sum(1 for line in body.split("\n") if line.startswith("| ") and not line.startswith("| size |"))
            errors = []
            for part in ["In-sample", "Held-out"]:
                found = re.search(part + r": mean \|error\| (\S+), max (\S+)\.", body)
                errors += found.groups() if found else ["-", "-"]
            row(fit, title, points, *errors)


def report_errors(report, titles):
    """The largest held-out |error| (percent) over the tables of a calibrate report whose titles are given."""
    worst = 0.0
    for table in report.split("### ")[1:]:
        title, body = table.split("\n", 1)
        if title.strip() in titles:
            found = re.search(r"Held-out: mean \|error\| \S+, max (\S+)%\.", body)
            worst = max(worst, float(found.group(1)))
    return worst


def headline():
    """The README's comparisons in one table: a few published runs beside tpsim, each with where it is explained."""
    fidelity = "docs/fidelity.md"
    runs = dict(zip(["tt8", "tt70", "ttt8", "ttt70", "405b", "dsd", "dsp", "dst"], results_of([
        "torchtitan-llama3-8b-tp8-forward", "torchtitan-llama3-70b-tp8-forward", "torchtitan-llama3-8b-tp8-fsdp8-train",
        "torchtitan-llama3-70b-tp8-fsdp32-train", "llama3-405b-tp8-pp16-dp128-train", "deepseek-v3-ep64-decode",
        "deepseek-v3-tp4-ep32-prefill", "deepseek-v3-tp8-decode"])))

    def pick(name, variant, **point):
        rows = [r for r in runs[name]["results"] if r["variant"] == variant and
                all(r["point"].get(k) == v for k, v in point.items())]
        assert len(rows) == 1, (name, variant, point)
        return rows[0]

    header("published run", "what", "published", "tpsim", "details")
    # TorchTitan's async-TP post, Figure 9: forward ms, sp then async (the torchtitan table above).
    for name, label, published_ms in [("tt8", "Llama-3-8B forward, TP 8 on H100, batch 8", (597, 464)),
                                      ("tt70", "Llama-3-70B forward, TP 8 on H100, batch 8", (3765, 3124))]:
        sp, asy = (pick(name, v, **{"workload.batch": "8"})["time_s"] for v in ["sp", "async"])
        row(f"TorchTitan: {label}", "async-TP speedup over SP", f"{published_ms[0] / published_ms[1]:.3f}x",
            f"{sp / asy:.3f}x", f"[forward speedups]({fidelity}#torchtitans-forward-speedups)")
    # TorchTitan's async-TP benchmark of June 2025, average tokens/s per GPU, bf16, sp then async.
    for name, label, published_tps in [("ttt8", "Llama-3.1-8B step, 64 H100, FSDP 8 x TP 8", (4378, 4809.4)),
                                       ("ttt70", "Llama-3.1-70B step, 256 H100, FSDP 32 x TP 8", (597.3, 652.4))]:
        sp, asy = (pick(name, v)["tokens_per_s_per_gpu"] for v in ["sp", "async"])
        row(f"TorchTitan: {label}", "async-TP step gain", f"{published_tps[1] / published_tps[0]:.3f}x",
            f"{asy / sp:.3f}x", f"[training runs]({fidelity}#torchtitans-training-runs)")
    # The Llama 3 Herd of Models, Table 4: 400 TFLOPs per GPU, 41% BF16 MFU, for this layout.
    row("Meta: Llama-3.1-405B step, 16,384 H100, TP 8 x PP 16 x DP 128", "MFU", "41%",
        f"{100 * pick('405b', 'sp')['mfu']:.1f}%", "[data parallelism](docs/model.md#data-parallelism-modeltrainddp_fsdp_synchpp-simenginedata_grouphpp)")
    # LMSYS's large-scale EP deployment (2025-05-05): 22,282 output tokens/s per node of 8 H100, two-batch overlap.
    row("LMSYS: DeepSeek-V3 decode, EP over 8-9 H100 nodes, 256 sequences per GPU", "tokens/s per GPU",
        f"{22282 / 8:,.0f}", f"{pick('dsd', 'tbo', **{'workload.batch': '256'})['tokens_per_s_per_gpu']:,.0f}",
        f"[DeepSeek-V3]({fidelity}#moe-decode-and-prefill-deepseek-v3)")
    # DeepSeek's Open Infra Index, day 6: 73.7k input tokens/s per H800 node, 56.3% of them cache hits.
    row("DeepSeek: V3 prefill, 4 H800 nodes, TP 4 x EP 32", "computed tokens/s per GPU",
        f"{73700 * (1 - 0.563) / 8:,.0f}",
        f"{pick('dsp', 'sp-tbo', **{'moe.dispatcher': 'deepep'})['tokens_per_s_per_gpu']:,.0f}",
        f"[DeepSeek-V3]({fidelity}#moe-decode-and-prefill-deepseek-v3)")
    # SemiAnalysis InferenceX, SGLang v0.5.12, DeepSeek-R1 on 8 H200, TP 8, concurrency 64: mean TPOT 29.77 ms.
    row("InferenceX: DeepSeek-R1 decode, 8 H200, TP 8, 64 sequences", "time per output token", "29.8 ms",
        f"{1e3 * pick('dst', 'tp', **{'workload.batch': '64'})['tpot_s']:.1f} ms",
        f"[DeepSeek-V3]({fidelity}#moe-decode-and-prefill-deepseek-v3)")
    # gpt-fast's README: Llama-2 7B and 70B decode on A100 at 330 W (the gpt-fast table); the fit is on them.
    import csv
    with open(ROOT / "calibrate/data/public/decode_tp_gpt_fast.csv", newline="") as f:
        published = {(r["model"], int(r["gpus"])): float(r["tokens_per_s"]) for r in csv.DictReader(f)}
    worst = 0.0
    for model, scenario in [("Llama-2-7B", "gpt-fast-llama2-7b-decode"), ("Llama-2-70B", "gpt-fast-llama2-70b-decode")]:
        for r in results(scenario)["results"]:
            if r["variant"] == "intra_node":
                measured = published[(model, int(r["point"]["parallelism.tp"]))]
                worst = max(worst, abs(100 * (r["tokens_per_s"] / measured - 1)))
    row(f"gpt-fast: Llama-2 7B and 70B decode, A100 at 330 W, TP 1-8 ({len(published)} runs)", "tokens/s",
        "as published", f"within {worst:.1f}% (fitted on them)", f"[gpt-fast]({fidelity}#gpt-fast-decode)")
    # The public NCCL rows, 8 H100 (collectives_h100_latency.csv): every table's held-out error.
    nccl = report_errors(report_h100(), {"h100-sxm collective allgather (measured as unknown)",
                                         "h100-sxm collective reducescatter (measured as unknown)",
                                         "h100-sxm collective allreduce (measured as nvls)"})
    row("NCCL on 8 H100: all-gather, reduce-scatter, NVLS all-reduce, 1-512 MiB", "time per call", "as measured",
        f"within {nccl:.1f}% held out", "[validation](docs/validation.md#summary)")
def memory_probe():
    # The H200 memory probe (real/results/h200-2026-12-04/torch): tpsim on its scenario at each depth it measured.
    folder = ROOT / "real/results/h200-2026-12-04/torch"
    measured = json.loads((folder / "memory.json").read_text())["rows"]
    scenario = (folder / "memory_probe.yaml").read_text()
    header("layers", "tpsim tensors GiB", "measured max allocated GiB", "tpsim peak reserved GiB",
           "measured max reserved GiB", "tpsim device GiB", "measured reserved + context GiB")
    with tempfile.TemporaryDirectory() as folder_out:
        for r in measured:
            path = Path(folder_out) / f"probe{r['layers']}.yaml"
            path.write_text(scenario.replace("num_hidden_layers: 1", f"num_hidden_layers: {r['layers']}"))
            m = results(str(path))["results"][0]["memory"]
            row(r["layers"], gib(m["tensor_bytes"]), gib(r["max_allocated"]), gib(m["peak_reserved"]),
                gib(r["max_reserved"]), gib(m["device_bytes"]), gib(r["max_reserved"] + r["device_used_after"] -
                                                                    r["reserved_after"]))


# The TorchTitan rows of shared/data/training_steps_public.csv whose jobs tpsim can run (not the context-parallel
# ones), as scenarios: one layer simulated (memory counts every layer), TorchTitan's 2024 layer.
PUBLISHED_MEMORY = [
    ("TT1-1", "Llama-3.1-8B, FSDP 8, 2 x 8192, selective, eager", 82.4,
     "model: llama-3.1-8b\nhardware: {gpu: h100-sxm-96gb}\nworkload: {phase: train, batch: 2, seq_len: 8192, "
     "layers: 1, global_batch: 16, recompute: selective}\nparallelism: {tp: 1, dp: 8}\nfsdp: {}\n"),
    ("TT1-3", "Llama-3.1-8B, FSDP 8, 2 x 8192, selective, compile + float8", 76.8,
     "model: llama-3.1-8b\nhardware: {gpu: h100-sxm-96gb}\nworkload: {phase: train, batch: 2, seq_len: 8192, "
     "layers: 1, global_batch: 16, recompute: selective, dtype: fp8, fp8_recipe: tensorwise}\n"
     "parallelism: {tp: 1, dp: 8}\nfsdp: {}\n"),
    ("TT3-1", "Llama-3.1-8B, FSDP 128, 2 x 8192, selective, eager", 67.0,
     "model: llama-3.1-8b\nhardware: {gpu: h100-sxm-96gb, topology: ib-rail, nodes: 16}\nworkload: {phase: train, "
     "batch: 2, seq_len: 8192, layers: 1, global_batch: 256, recompute: selective}\nparallelism: {tp: 1, dp: 128}\n"
     "fsdp: {}\n"),
    ("TT4-1", "Llama-3.1-70B, FSDP 32 x TP 8, 16 x 8192, full, compile + float8", 71.9,
     "model: llama-3.1-70b\nhardware: {gpu: h100-sxm-96gb, topology: ib-rail, nodes: 32}\nworkload: {phase: train, "
     "batch: 16, seq_len: 8192, layers: 1, global_batch: 512, recompute: full, dtype: fp8, fp8_recipe: tensorwise}\n"
     "parallelism: {tp: 8, dp: 32}\nfsdp: {}\n"),
]


def memory_published():
    # Whatever it shows: nothing in tpsim is fitted on these rows.
    header("row", "job (TorchTitan, Dec 2024, H100 96 GB)", "published GiB (max over ranks)", "tpsim peak reserved GiB",
           "tpsim tensors GiB", "tpsim device GiB")
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for name, _, _, text in PUBLISHED_MEMORY:
            path = Path(folder) / f"{name}.yaml"
            path.write_text(f"name: {name}\nimplementation: torchtitan-2024\n{text}variants: [{{name: sp, tp_mode: sp}}]\n")
            paths.append(str(path))
        for (name, label, published_gib, _), d in zip(PUBLISHED_MEMORY, results_of(paths)):
            m = d["results"][0]["memory"]
            row(name, label, f"{published_gib:.1f}", gib(m["peak_reserved"]), gib(m["tensor_bytes"]), gib(m["device_bytes"]))


# Every row of shared/data/training_steps_public.csv: a scenario for each job tpsim can run (every layer simulated,
# so the step is the whole model's), or why it cannot. Nothing is fitted on these rows (docs/fidelity.md).
TRAINING_CSV = ROOT / "calibrate/data/public/training_steps_public.csv"
NOT_RUN = "no scenario for this row"
# fms-fsdp's shapes (foundation-model-stack/fms-fsdp fms_fsdp/utils/config_utils.py get_model_config): Llama-2-13B's,
# and its llama2_34b (CodeLlama-34B's: grouped-query attention, 8 KV heads).
LLAMA2_13B = ("{name: llama-2-13b, model_type: llama, hidden_size: 5120, intermediate_size: 13824, num_attention_heads: 40, "
              "num_key_value_heads: 40, num_hidden_layers: 40, vocab_size: 32000}")
LLAMA2_34B = ("{name: llama-2-34b, model_type: llama, hidden_size: 8192, intermediate_size: 22016, num_attention_heads: 64, "
              "num_key_value_heads: 8, num_hidden_layers: 48, vocab_size: 32000}")


def titan(model, nodes, batch, seq, recompute, tp, dp, fp8, eager=False, pp=1, microbatches=1, variants="sp", cp=1,
          fsdp_fp8=False):
    # Uncompiled, every RMSNorm and SwiGLU runs as eager PyTorch's kernels (train.py's compile = false).
    implementation = ("{preset: torchtitan-2024, add_norm: separate, rms_norm: eager, swiglu: eager}" if eager
                      else "torchtitan-2024")
    dtype = ", dtype: fp8, fp8_recipe: tensorwise" if fp8 else ""
    # 405B's 126 layers over 8 stages as TorchTitan splits them without split points (9dec370's
    # torchtitan/parallelisms/pipelining_utils.py generate_split_points: 126 // 8 layers each, the 6 left over one
    # each to the stages after the first): 15, then 16 six times, the last 15.
    pipeline = "pipeline: {schedule: 1f1b, chunk_layers: [15, 16, 16, 16, 16, 16, 16, 15]}\n" if pp > 1 else ""
    names = {"sp": "{name: sp, tp_mode: sp}", "async": "{name: async, tp_mode: async, chunks: 8, transport: copy_engine}"}
    return (f"model: {model}\nhardware: {{gpu: h100-sxm-96gb, topology: ib-rail, nodes: {nodes}}}\n"
            f"implementation: {implementation}\nworkload: {{phase: train, batch: {batch}, seq_len: {seq}, layers: all, "
            f"microbatches: {microbatches}, recompute: {recompute}{dtype}}}\nparallelism: {{tp: {tp}, pp: {pp}, dp: {dp}{titan_cp(cp)}}}\n"
            f"fsdp: {{reshard_after_forward: {'false' if pp > 1 else 'true'}{FSDP_FP8 if fsdp_fp8 else ''}}}\n{pipeline}"
            f"variants: [{names[variants]}]\n")


# TorchTitan's 405B config (9dec370's train_configs/llama3_405b.toml, [float8]): enable_fsdp_float8_all_gather and
# precompute_float8_dynamic_scale_for_fsdp, which its Float8Handler (torchtitan/float8.py) turns on only where FSDP's
# dp_shard degree is above 1 (`parallel_dims.dp_shard_enabled and ...`): not at fsdp 1 x cp 8, whose FSDP shards over
# the CP group alone and gathers bf16. The 8B and 70B configs of that commit enable no float8 and state neither.
FSDP_FP8 = ", fp8_all_gather: true, precompute_fp8_scales: true"


# TorchTitan's context parallelism: PyTorch's context_parallel with its default K/V rotation, all-gather (torchtitan's
# context_parallel_rotate_method "allgather"), as torch 1963fc8's _attention.py runs it (cp_comm_type torch_all_gather:
# cp SDPA calls merged in fp32, the fp32 dK/dV passed rank to rank); FSDP shards over dp x cp (its dp_shard_cp mesh).
def titan_cp(cp):
    return f", cp: {cp}, cp_comm_type: torch_all_gather" if cp > 1 else ""


# Megatron-LM's and NeMo's recipes run the distributed optimizer with both overlaps (--use-distributed-optimizer,
# --overlap-grad-reduce, --overlap-param-gather); assumed for every Megatron row that does not state otherwise.
DIST_OPT = "distributed_optimizer: {overlap_grad_reduce: true, overlap_param_gather: true}\n"


# NeMo's MLPerf v5.0 Llama 3.1 405B submission reduces gradients in bf16 (its pretrain.py: grad_reduce_in_fp32=False in
# both MegatronMixedPrecision and DistributedDataParallelConfig).
DIST_OPT_BF16 = DIST_OPT.replace("}\n", ", reduce_dtype: bf16}\n")


# Transformer Engine's TP communication overlap (userbuffers) as the fp8 H100 recipes configure it: Megatron-Bridge's
# training/comm_overlap.py (HEAD 067f987, the perf recipes' tp_comm_overlap_cfg) gives every forward GEMM and the
# row-parallel data gradients TE's ring exchange, and the column-parallel backward TE's bulk overlaps with these SMs
# (num_sm of qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad). 70B: userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192
# (perf_recipes/llama/h100/llama3.py); 405B: userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192 (llama31.py). The
# Megatron-LM rows follow NeMo's performance scripts (their README), whose configs these are; NeMo's MLPerf v5.0
# 405B submission runs TP_COMM_OVERLAP=True from a tp_overlap file not among its published files: assumed the 405B one.
UB_70B = "{qkv_dgrad: 4, qkv_wgrad: 24, fc1_dgrad: 2, fc1_wgrad: 4}"
UB_405B = "{qkv_dgrad: 2, qkv_wgrad: 24, fc1_dgrad: 2, fc1_wgrad: 2}"


def megatron(model, nodes, microbatches, tp=1, pp=1, dp=8, virtual=1, fsdp=False, cp=1, chunk_layers=None,
             dist_opt=DIST_OPT, userbuffers=None, recompute_layers=0):
    layout = f", chunk_layers: {chunk_layers}" if chunk_layers else ""
    pipeline = f"pipeline: {{schedule: interleaved, virtual_stages: {virtual}{layout}}}\n" if pp > 1 else ""
    implementation = f"{{preset: megatron-te, userbuffer_sms: {userbuffers}}}" if userbuffers else "megatron-te"
    recompute = f"full, recompute_layers: {recompute_layers}" if recompute_layers else "none"
    variant = ("{name: tp-overlap, tp_mode: async, transport: copy_engine}" if userbuffers
               else "{name: sp, tp_mode: sp}" if tp > 1 else "{name: dp, tp_mode: tp}")
    return (f"model: {model}\nhardware: {{gpu: h100-sxm, topology: ib-rail, nodes: {nodes}}}\nimplementation: {implementation}\n"
            f"workload: {{phase: train, batch: 1, seq_len: 8192, layers: all, microbatches: {microbatches}, recompute: {recompute}, "
            f"dtype: fp8, fp8_recipe: tensorwise}}\nparallelism: {{tp: {tp}, pp: {pp}, dp: {dp}" + (f", cp: {cp}" if cp > 1 else "") + "}\n"
            + ("fsdp: {reshard_after_forward: true}\n" if fsdp else "") + (dist_opt if not fsdp and dp * cp > 1 else "")
            + pipeline + f"variants: [{variant}]\n")


# fms-fsdp as the blog's rows ran (pytorch.org 2024-03-13, "Maximizing training throughput using PyTorch FSDP", and
# foundation-model-stack/fms-fsdp's README of that day, 5e522b4): FSDP1 in bf16 with bf16 gradient reduction
# (fms_fsdp/policies/mixed_precision.py bfSixteen), HYBRID_SHARD for 7B (FSDP1 shards it within each 8-GPU node) and
# FULL_SHARD for the others (the README's table), and no torch.compile (scripts/train.sh use_torch_compile=False; the
# README's compiled numbers came in May 2024), so FMS's Llama layer runs eager (foundation-model-stack, March 2024):
# separate query/key/value and w1/wg linears (fms/modules/attention.py, feedforward.py), the RMSNorm in fp32
# (layernorm.py use_high_precision_pow), SiLU and the product apart, RoPE in fp32 (positions.py adjusted_qk), K and V
# expanded to the query heads before SDPA (attention.py), and the loss over bf16 logits. The network: the blog's
# "400Gbps" (A100) and "800Gbps" (H100) inter-node interconnects per node, as no NIC of the time gave one GPU that
# (A100 nodes carry ConnectX-6, 200 Gb/s at most; H100 nodes ConnectX-7, 400 Gb/s): 6.25 and 12.5 GB/s per GPU.
FMS_EAGER = ("{attention: fa2, qkv: separate, gate_up: separate, rope: fp32_unfused, repeat_kv: true, add_norm: separate, "
             "rms_norm: eager, swiglu: eager}")


def fms(model, gpu, gpus, nic, recompute, shard_degree=None):
    shard = f", shard_degree: {shard_degree}" if shard_degree else ""
    return (f"model: {model}\nhardware: {{gpu: {gpu}, topology: ib-rail, nodes: {gpus // 8}, nic_GBps: {nic}}}\n"
            f"implementation: {FMS_EAGER}\nworkload: {{phase: train, batch: 2, seq_len: 4096, layers: all, "
            f"microbatches: 1, recompute: {recompute}}}\nparallelism: {{tp: 1, dp: {gpus}}}\n"
            f"fsdp: {{reshard_after_forward: true, reduce_dtype: bf16{shard}}}\nvariants: [{{name: dp, tp_mode: tp}}]\n")


# Llama-3.1-405B's 126 layers over 8 stages x 8 virtual stages: the first chunk beside the embedding and the last beside
# the loss one layer lighter (Megatron's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split,
# assumed from the 64 chunks the recipes' layout needs), every other chunk two layers.
LAYERS_405B_PP8_VP8 = "[" + ", ".join(["1"] + ["2"] * 62 + ["1"]) + "]"

# Megatron-Bridge's H100 8B recipe recomputes the first 5 layers whole (perf_recipes/llama/h100/llama3.py:
# recompute_granularity "full", recompute_method "block", recompute_num_layers 5).
RECOMPUTED_8B = 5

# Llama-3-70B's 80 layers over 8 stages x 5 virtual stages as the H100 recipe lays them out
# (perf_recipes/llama/h100/llama3.py, pipeline_model_parallel_layout "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"): the embedding
# beside two layers, 34 chunks of two, one of three (chunk 35: stage 3's last virtual stage), three of two, and the last
# layer beside the loss.
LAYERS_70B_PP8_VP5 = "[" + ", ".join(["2"] * 35 + ["3"] + ["2"] * 3 + ["1"]) + "]"


# Each row: the scenario (and what it approximates), or the reason it cannot run.
TRAINING_JOBS = {
    "TT1-1": titan("llama-3.1-8b", 1, 2, 8192, "selective", 1, 8, False, eager=True),
    "TT1-2": titan("llama-3.1-8b", 1, 2, 8192, "selective", 1, 8, False),
    "TT1-3": titan("llama-3.1-8b", 1, 2, 8192, "selective", 1, 8, True),
    "TT2-1": titan("llama-3.1-8b", 1, 1, 32768, "full", 1, 8, True),
    "TT3-1": titan("llama-3.1-8b", 16, 2, 8192, "selective", 1, 128, False, eager=True),
    "TT3-2": titan("llama-3.1-8b", 16, 2, 8192, "selective", 1, 128, False),
    "TT3-3": titan("llama-3.1-8b", 16, 2, 8192, "selective", 1, 128, True),
    "TT4-1": titan("llama-3.1-70b", 32, 16, 8192, "full", 8, 32, True),
    "TT4-2": titan("llama-3.1-70b", 32, 16, 8192, "full", 8, 32, True, variants="async"),
    "TT2-2": titan("llama-3.1-8b", 1, 1, 65536, "full", 1, 4, True, cp=2),
    "TT2-3": titan("llama-3.1-8b", 1, 1, 131072, "full", 1, 2, True, cp=4),
    "TT2-4": titan("llama-3.1-8b", 1, 1, 262144, "full", 1, 1, True, cp=8),
    # The 405B rows' local batch of 8 in 8 micro-batches: TorchTitan's default without pipeline_parallel_microbatches is
    # the pp degree (9dec370's torchtitan/parallelisms/pipeline_llama.py).
    "TT6-1": titan("llama-3.1-405b", 64, 1, 32768, "full", 8, 8, True, pp=8, microbatches=8, variants="async", fsdp_fp8=True),
    "TT6-2": titan("llama-3.1-405b", 64, 1, 65536, "full", 8, 4, True, pp=8, microbatches=8, variants="async", cp=2, fsdp_fp8=True),
    "TT6-3": titan("llama-3.1-405b", 64, 1, 131072, "full", 8, 2, True, pp=8, microbatches=8, variants="async", cp=4, fsdp_fp8=True),
    # fsdp 1 x cp 8: TorchTitan's Float8Handler leaves FSDP's all-gather in bf16 (FSDP_FP8).
    "TT6-4": titan("llama-3.1-405b", 64, 1, 262144, "full", 8, 1, True, pp=8, microbatches=8, variants="async", cp=8),
    "NB-D01": megatron("llama-3.1-8b", 1, 16, fsdp=True, recompute_layers=RECOMPUTED_8B),
    "NB-D02": megatron("llama-3.1-70b", 8, 64, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B),
    "NB-D04": megatron("llama-3.1-8b", 1, 16, fsdp=True, recompute_layers=RECOMPUTED_8B),
    "NB-D05": megatron("llama-3.1-70b", 8, 64, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B),
    "NB-D07": megatron("llama-3.1-70b", 8, 128, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B),
    "NB-D10": megatron("llama-3.1-70b", 8, 128, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B),
    "ML-1": megatron("llama-3.1-8b", 1, 32, dp=4, cp=2),
    "ML-2": megatron("llama-3.1-70b", 8, 64, tp=4, pp=8, dp=2, virtual=5, chunk_layers=LAYERS_70B_PP8_VP5, userbuffers=UB_70B),
    "NB-D03": megatron("llama-3.1-405b", 128, 64, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B),
    "NB-D06": megatron("llama-3.1-405b", 128, 64, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B),
    "NB-D08": megatron("llama-3.1-405b", 128, 192, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B),
    "NB-D11": megatron("llama-3.1-405b", 128, 192, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B),
    "ML-3": megatron("llama-3.1-405b", 128, 64, tp=8, pp=8, dp=8, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, userbuffers=UB_405B),
    # NeMo's MLPerf v5.0 405B submissions, with the distributed optimizer as the Megatron rows above, in bf16.
    "ML5-1": megatron("llama-3.1-405b", 64, 288, tp=8, pp=8, dp=4, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B),
    "ML5-2": megatron("llama-3.1-405b", 256, 72, tp=8, pp=8, dp=16, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B),
    "ML5-3": megatron("llama-3.1-405b", 304, 64, tp=8, pp=8, dp=19, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B),
    "ML5-4": megatron("llama-3.1-405b", 320, 56, tp=8, pp=8, dp=20, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B),
    "ML5-5": megatron("llama-3.1-405b", 1024, 24, tp=8, pp=8, dp=64, virtual=8, cp=2, chunk_layers=LAYERS_405B_PP8_VP8, dist_opt=DIST_OPT_BF16, userbuffers=UB_405B),
    # 13B's "selective AC" checkpoints every n-th block (fms_fsdp/policies/ac_handler.py, n not stated): run as tpsim's
    # op-level selective recomputation, between none and full.
    "IBM-1-a100": fms("llama-2-7b", "a100-sxm", 128, 6.25, "none", shard_degree=8),
    "IBM-1-h100": fms("llama-2-7b", "h100-sxm", 96, 12.5, "none", shard_degree=8),
    "IBM-2-a100": fms(LLAMA2_13B, "a100-sxm", 128, 6.25, "selective"),
    "IBM-2-h100": fms(LLAMA2_13B, "h100-sxm", 96, 12.5, "selective"),
    "IBM-3-a100": fms(LLAMA2_34B, "a100-sxm", 128, 6.25, "full"),
    "IBM-3-h100": fms(LLAMA2_34B, "h100-sxm", 96, 12.5, "full"),
    "IBM-4-a100": fms("llama-2-70b", "a100-sxm", 128, 6.25, "full"),
    "IBM-4-h100": fms("llama-2-70b", "h100-sxm", 96, 12.5, "full"),
}


def training_rows():
    import csv
    with open(TRAINING_CSV) as f:
        return list(csv.DictReader(f))


def training_published():
    # Whatever it shows: nothing in tpsim is fitted on these rows.
    rows = training_rows()
    runnable = [r for r in rows if r["row"] in TRAINING_JOBS]
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for r in runnable:
            path = Path(folder) / f"{r['row']}.yaml"
            path.write_text(f"name: {r['row']}\n" + TRAINING_JOBS[r["row"]])
            paths.append(str(path))
        predicted = dict(zip((r["row"] for r in runnable), results_of(paths)))
    header("row", "framework", "model", "GPUs", "layout", "published tok/s/GPU", "tpsim tok/s/GPU", "error",
           "published GiB", "tpsim peak reserved GiB", "error")
    for r in rows:
        layout = f"{r['dp_or_fsdp']}, tp {r['tp']}, pp {r['pp']}, cp {r['cp']}"
        if r["row"] not in predicted:
            row(r["row"], r["framework"], r["model"], r["gpus"], layout, r["tokens_per_s_per_gpu"], NOT_RUN, "", r["memory_GiB"], "", "")
            continue
        v = predicted[r["row"]]["results"][0]
        tokens, published = v["tokens_per_s_per_gpu"], float(r["tokens_per_s_per_gpu"])
        memory = v["memory"]["peak_reserved"] / 2**30
        memory_error = f"{100 * (memory / float(r['memory_GiB']) - 1):+.0f}%" if r["memory_GiB"] else ""
        row(r["row"], r["framework"], r["model"], r["gpus"], layout, r["tokens_per_s_per_gpu"], f"{tokens:.0f}",
            f"{100 * (tokens / published - 1):+.0f}%", r["memory_GiB"], f"{memory:.1f}", memory_error)


TABLES = {"generate": generate, "decode-delta": decode_delta, "prefill": prefill, "published": published, "torchtitan": torchtitan, "torchtitan-train": torchtitan_train, "traced-layer": traced_layer, "traced-batch": traced_batch, "gpt-fast": gpt_fast, "train": train, "train-recipes": train_recipes, "train-dtp": train_dtp,
          "gpu-generations": gpu_generations, "validation-h100": validation_h100, "validation-h200": validation_h200,
          "validation-summary": validation_summary, "headline": headline, "nccl-modes": nccl_modes,
          "memory-probe": memory_probe, "memory-published": memory_published,
          "training-published": training_published}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in TABLES:
        sys.exit("usage: tools/doc_tables.py " + "|".join(TABLES))
    TABLES[sys.argv[1]]()
