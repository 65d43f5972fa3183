"""The calibration reports of the shipped measurement files (`tpsim calibrate report`), and the NCCL rows against
`tpsim predict collective` in each --as-called mode."""
import concurrent.futures
import json
import re
import sys

from doctables.common import MEASUREMENTS, ROOT, header, row, tpsim


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
