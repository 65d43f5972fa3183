#!/usr/bin/env python3
"""Prints one of the markdown tables that README.md and docs/*.md quote, from tpsim runs of the shipped
scenarios or from `tpsim calibrate report` on the shipped measurement files.

  tools/doc_tables.py TABLE      (tpsim: $TPSIM, else build/cli/tpsim)

The docs name the command above each table (`<!-- output of: tools/doc_tables.py TABLE -->`);
tools/doc_outputs.py checks that they still agree. The tables live in tools/doctables/, one module per family.
"""
import sys

from doctables.calibration import nccl_modes, validation_h100, validation_h200, validation_summary
from doctables.headline import gpt_fast, headline
from doctables.memory import memory_probe, memory_published
from doctables.shipped import decode_delta, generate, gpu_generations, prefill, train_dtp, train_recipes
from doctables.torchtitan import published, torchtitan, torchtitan_train, train
from doctables.traced import traced_batch, traced_layer
from doctables.training_published import training_published

TABLES = {"generate": generate, "decode-delta": decode_delta, "prefill": prefill, "published": published, "torchtitan": torchtitan, "torchtitan-train": torchtitan_train, "traced-layer": traced_layer, "traced-batch": traced_batch, "gpt-fast": gpt_fast, "train": train, "train-recipes": train_recipes, "train-dtp": train_dtp,
          "gpu-generations": gpu_generations, "validation-h100": validation_h100, "validation-h200": validation_h200,
          "validation-summary": validation_summary, "headline": headline, "nccl-modes": nccl_modes,
          "memory-probe": memory_probe, "memory-published": memory_published,
          "training-published": training_published}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in TABLES:
        sys.exit("usage: tools/doc_tables.py " + "|".join(TABLES))
    TABLES[sys.argv[1]]()
