#!/usr/bin/env python3
"""How much each model parameter moves the headline predictions: TorchTitan's async-TP forward speedup of
Llama-3-8B and Llama-3-70B at batch 8 (scenarios/published/torchtitan-llama3-*-tp8-forward.yaml), each parameter
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

def profile_value(path):
    """A number of the shipped default profile by its dotted path ("attention.kernels.fa2.efficiency")."""
    wanted, depth = path.split("."), 0
    for line in (ROOT / f"scenarios/presets/profiles/{GPU}.yaml").read_text().splitlines():
        indent = (len(line) - len(line.lstrip())) // 2
        if indent != depth or not line.strip().startswith(wanted[depth] + ":"):
            continue
        if depth == len(wanted) - 1:
            return float(line.split(":", 1)[1])
        depth += 1
    raise KeyError(path)


def cases():
    """(label, profile override YAML or None, implementation override or None, hardware override or None),
    each profile value moved from the shipped one."""
    loaded, pair = profile_value("copy_engine.all_ranks_link_efficiency"), profile_value("copy_engine.link_efficiency")
    fa2, fa2_back = profile_value("attention.kernels.fa2.efficiency"), profile_value("attention.kernels.fa2.backward_efficiency")
    # A kernel's entry is given whole: its other rates as shipped.
    fa2_causal = profile_value("attention.kernels.fa2.backward_causal_tokens")
    fa2_unmasked = profile_value("attention.kernels.fa2.unmasked_efficiency")
    fa2_forward_causal = profile_value("attention.kernels.fa2.forward_causal_tokens")
    nccl, gemm = profile_value("nccl.link_efficiency"), profile_value("gemm.efficiency")
    idle, measured = profile_value("power.idle_W"), profile_value("power.measured_at_W")
    energy = profile_value("power.transfer_pJ_per_bit")
    tail, sms = profile_value("gemm.shared_tail_tiles"), profile_value("nccl.sms")
    sustained = profile_value("power.sustained_ratio")
    # Back to back at the preset's 500 W: the curve anchored at the sustained ratio (docs/model.md).
    clock = lambda exponent: sustained * ((500 - idle) / (measured - idle)) ** (1 / exponent)
    return [
        ("as shipped", None, None, None),
        (f"copy_engine.all_ranks_link_efficiency -10% ({0.9 * loaded:.3f})",
         f"copy_engine: {{all_ranks_link_efficiency: {0.9 * loaded:.6g}}}", None, None),
        (f"copy_engine.all_ranks_link_efficiency +10% ({1.1 * loaded:.3f})",
         f"copy_engine: {{all_ranks_link_efficiency: {1.1 * loaded:.6g}}}", None, None),
        (f"copy engine at the one-pair rate ({pair:.3f})", f"copy_engine: {{all_ranks_link_efficiency: {pair}}}", None,
         None),
        (f"power.exponent 2 (back to back {clock(2):.2f} at 500 W)", "power: {exponent: 2}", None, None),
        (f"power.exponent 4 (back to back {clock(4):.2f} at 500 W)", "power: {exponent: 4}", None, None),
        ("power limit 700 W (the board's)", None, None, "power_limit_W: 700"),
        (f"without the limiter's window (power.sustained_ratio {sustained:g} -> 0: each kernel at the clock the limit "
         "allows it alone)", "power: {sustained_ratio: 0}", None, None),
        (f"power.sustained_ratio -5% ({0.95 * sustained:.3f})", f"power: {{sustained_ratio: {0.95 * sustained:.6g}}}",
         None, None),
        (f"power.sustained_ratio +5% ({1.05 * sustained:.3f})", f"power: {{sustained_ratio: {1.05 * sustained:.6g}}}",
         None, None),
        ("power.transfer_pJ_per_bit 0 (transfers draw nothing)", "power: {transfer_pJ_per_bit: 0}", None, None),
        (f"power.transfer_pJ_per_bit x2 ({2 * energy:.1f})", f"power: {{transfer_pJ_per_bit: {2 * energy:.6g}}}", None,
         None),
        ("FlashAttention-2 efficiency -10%",
         f"attention: {{kernels: {{fa2: {{efficiency: {0.9 * fa2:.6g}, forward_causal_tokens: {fa2_forward_causal}, "
         f"unmasked_efficiency: {0.9 * fa2_unmasked:.6g}, "
         f"backward_efficiency: {fa2_back}, backward_causal_tokens: {fa2_causal}}}}}}}", None,
         None),
        (f"FlashAttention-2 forward_causal_tokens {fa2_forward_causal:.0f} -> 0 (its causal forward at the long-sequence "
         "rate at every length)",
         f"attention: {{kernels: {{fa2: {{efficiency: {fa2}, unmasked_efficiency: {fa2_unmasked}, "
         f"backward_efficiency: {fa2_back}, backward_causal_tokens: {fa2_causal}}}}}}}", None, None),
        ("nccl.link_efficiency -10%", f"nccl: {{link_efficiency: {0.9 * nccl:.6g}}}", None, None),
        (f"nccl.sms {sms:.0f} -> 16 (the count assumed before NCCL's code sourced it)", "nccl: {sms: 16}", None, None),
        (f"nccl.p2p_sms and nvls_sms as nccl.sms ({sms:.0f})",
         f"nccl: {{p2p_sms: {sms:.0f}, nvls_sms: {sms:.0f}}}", None, None),
        (f"gemm.shared_tail_tiles 0 (was {tail:g}: no tail beside comm kernels)", "gemm: {shared_tail_tiles: 0}", None,
         None),
        (f"gemm.shared_tail_tiles x2 ({2 * tail:g})", f"gemm: {{shared_tail_tiles: {2 * tail:.6g}}}", None, None),
        ("gemm.efficiency -5%", f"gemm: {{efficiency: {0.95 * gemm:.6g}}}", None, None),
        ("no sp layout copies", None, "sp_layout_copies: false", None),
        ("RoPE fused", None, "rope: fused", None),
        ("residual add and RMSNorm as two kernels", None, "add_norm: separate", None),
        ("fused q/k/v and gate/up", None, "qkv: fused, gate_up: fused", None),
        ("FlashAttention-3 instead of -2", None, "attention: fa3", None),
        ("idealised async-TP pipeline (not PyTorch's ops)", None, "async_tp: pipeline", None),
        ("tile-fused GEMM kernels (Flux, TileLink; not PyTorch's ops)", None, "async_tp: tile_fused", None),
    ]


def speedup(model, profile, implementation, hardware, folder):
    text = (ROOT / f"scenarios/published/torchtitan-llama3-{model}-tp8-forward.yaml").read_text()
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
        for label, profile, implementation, hardware in cases():
            cells = []
            for model in ("8b", "70b"):
                s = speedup(model, profile, implementation, hardware, folder)
                base.setdefault(model, s)
                cells += [f"{s:.3f}x", f"{s - base[model]:+.3f}"]
            print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
