"""Tables of the shipped scenarios' runs: decode, prefill, training recipes, DTP and GPU generations."""
import re
import tempfile
from pathlib import Path

from doctables.common import ROOT, by_variant, gib, header, ms, results, results_of, row


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
