"""TorchTitan's published async-TP numbers beside tpsim: forward speedups, the June 2025 training runs and the step."""
from doctables.common import by_variant, ms, results, results_of, row, header


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
