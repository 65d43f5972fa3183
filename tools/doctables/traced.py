"""The traced TorchTitan Llama-3-70B layer (async_tp_trace_layer.csv): each traced kernel or block beside tpsim's, and
the sp kernels' errors at the batches near the inferred one."""
import json
import tempfile
from pathlib import Path

from doctables.common import ROOT, header, row, tpsim


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
