"""Memory tables: the H200 probe's measured depths and TorchTitan's published memory beside tpsim's."""
import json
import tempfile
from pathlib import Path

from doctables.common import ROOT, gib, header, results, results_of, row


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
