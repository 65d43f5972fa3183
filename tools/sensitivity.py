#!/usr/bin/env python3
"""How much each model parameter moves the headline predictions: TorchTitan's async-TP forward speedup of
Llama-3-8B and Llama-3-70B at batch 8 (scenarios/torchtitan-llama3-*-tp8-forward.yaml), each parameter
moved alone. Usage: tools/sensitivity.py (TPSIM=path/to/tpsim to choose the binary)."""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TPSIM = os.environ.get("TPSIM", str(ROOT / "build/cli/tpsim"))
GPU = "h100-sxm-96gb"

# (label, profile override YAML or None, implementation override mapping or None, hardware override or None)
CASES = [
    ("as shipped", None, None, None),
    ("copy_engine.all_ranks_link_efficiency -10% (0.544)", "copy_engine: {all_ranks_link_efficiency: 0.544}", None, None),
    ("copy_engine.all_ranks_link_efficiency +10% (0.665)", "copy_engine: {all_ranks_link_efficiency: 0.665}", None, None),
    ("copy engine at the one-pair rate (0.844)", "copy_engine: {all_ranks_link_efficiency: 0.844444}", None, None),
    ("power.exponent 2 (clock 0.83 at 500 W)", "power: {exponent: 2}", None, None),
    ("power.exponent 4 (clock 0.91 at 500 W)", "power: {exponent: 4}", None, None),
    ("power limit 700 W (no derate)", None, None, "power_limit_W: 700"),
    ("FlashAttention-2 efficiency -10%", "attention: {kernels: {fa2: {efficiency: 0.30473, backward_efficiency: 0.32545}}}",
     None, None),
    ("nccl.link_efficiency -10%", "nccl: {link_efficiency: 0.67413}", None, None),
    ("gemm.efficiency -5%", "gemm: {efficiency: 0.7631}", None, None),
    ("no sp layout copies", None, "sp_layout_copies: false", None),
    ("RoPE fused", None, "rope: fused", None),
    ("fused q/k/v and gate/up", None, "qkv: fused, gate_up: fused", None),
    ("FlashAttention-3 instead of -2", None, "attention: fa3", None),
    ("idealised async-TP pipeline (not PyTorch's ops)", None, "async_tp: pipeline", None),
]


def speedup(model, profile, implementation, hardware, folder):
    text = (ROOT / f"scenarios/torchtitan-llama3-{model}-tp8-forward.yaml").read_text()
    text = text[: text.index("sweep:")].replace("batch: 4,", "batch: 8,")
    if profile:
        path = pathlib.Path(folder) / "profile.yaml"
        path.write_text(f"gpu: {GPU}\nbase: {GPU}\n{profile}\n")
        text = text.replace("calibration: default", f"calibration: {path}")
    if implementation:
        text = text.replace("implementation: torchtitan-2024",
                            "implementation: {preset: torchtitan-2024, " + implementation + "}")
    if hardware:
        text = text.replace("nodes: 1}", "nodes: 1, " + hardware + "}")
    scenario = pathlib.Path(folder) / "scenario.yaml"
    scenario.write_text(text)
    out = subprocess.run([TPSIM, "run", str(scenario), "-q", "--json", "-"], check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    rows = {r["variant"]: r["time_s"] for r in json.loads(out)["results"]}
    return rows["sp"] / rows["async"]


def main():
    print("| parameter moved | Llama-3-8B speedup | change | Llama-3-70B speedup | change |")
    print("|---|---|---|---|---|")
    base = {}
    with tempfile.TemporaryDirectory() as folder:
        for label, profile, implementation, hardware in CASES:
            cells = []
            for model in ("8b", "70b"):
                s = speedup(model, profile, implementation, hardware, folder)
                base.setdefault(model, s)
                cells += [f"{s:.3f}x", f"{s - base[model]:+.3f}"]
            print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
