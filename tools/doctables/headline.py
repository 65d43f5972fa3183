"""The README's headline comparisons, and gpt-fast's published decode beside tpsim."""
import csv

from doctables.calibration import report_errors, report_h100
from doctables.common import ROOT, header, results, results_of, row


def gpt_fast_published():
    """gpt-fast's README (decode_tp_gpt_fast.csv, copied under calibrate/data/public): (model, GPUs) -> tokens/s."""
    with open(ROOT / "calibrate/data/public/decode_tp_gpt_fast.csv", newline="") as f:
        return {(r["model"], int(r["gpus"])): float(r["tokens_per_s"]) for r in csv.DictReader(f)}


def gpt_fast():
    published = gpt_fast_published()
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
    published = gpt_fast_published()
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
