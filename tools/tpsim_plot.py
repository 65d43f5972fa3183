#!/usr/bin/env python3
"""Plots tpsim results: speedup (or time, exposed communication, tokens/s) curves over a sweep axis,
one line per variant or per value of another axis; a stacked breakdown of one point's time; a plan's ranked
layouts as bars (compute, bubble, exposed communication by dimension); or a serving plan's candidates as tokens/s per
user against tokens/s per GPU, with their Pareto front.

Input: a `tpsim sweep` output folder (its results.jsonl, or its results.csv), a `tpsim run --json` file, or a
`tpsim plan --json` file.
Points whose memory per GPU does not fit the GPU's HBM are drawn hollow.
Run through `tpsim plot ...` or directly: python3 tools/tpsim_plot.py RESULTS --x AXIS ...
"""
import argparse
import csv
import io
import json
import os
import sys

Y_COLUMNS = {
    "speedup": ("speedup", "speedup over the baseline variant (x)", 1.0),
    "time": ("time_s", "time (ms)", 1e3),
    "exposed_comm": ("exposed_comm_s", "exposed communication (ms)", 1e3),
    "tokens_per_s": ("tokens_per_s", "tokens / s of one replica (its TP group, or its pipeline)", 1.0),
    "ttft": ("ttft_s", "time to first token (ms)", 1e3),
    "tpot": ("tpot_s", "time per output token (ms)", 1e3),
}


class PlotError(Exception):
    pass


# results.csv columns that are numbers; the columns between "point" and "variant" are the sweep's axes.
CSV_NUMBERS = {"chunks", "time_s", "compute_s", "comm_s", "exposed_comm_s", "overlap", "idle_s", "speedup",
               "tokens_per_s", "ttft_s", "tpot_s", "memory_per_gpu_bytes", "pipeline_bubble_fraction"}


def csv_rows(text, path):
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header or header[0] != "point" or "variant" not in header:
        raise PlotError(f"{path}: not a tpsim results.csv (its first columns are point, the axes, variant)")
    axes = header[1:header.index("variant")]
    rows = []
    for number, cells in enumerate(reader, start=2):
        if len(cells) != len(header):
            raise PlotError(f"{path}:{number}: {len(cells)} cells, the header has {len(header)}")
        row = {"point_index": int(cells[0]) if cells[0].isdigit() else 0, "point": dict(zip(axes, cells[1:len(axes) + 1]))}
        for name, cell in zip(header[len(axes) + 1:], cells[len(axes) + 1:]):
            if cell == "":
                continue
            if name in CSV_NUMBERS:
                try:
                    row[name] = float(cell)
                except ValueError:
                    raise PlotError(f"{path}:{number}: {name} is not a number: '{cell}'") from None
            elif name == "fits_memory":
                row[name] = cell == "true"
            else:
                row[name] = cell
        rows.append(row)
    return rows


def sweep_title(path):
    title = os.path.basename(os.path.dirname(os.path.abspath(path)))
    info = os.path.join(os.path.dirname(os.path.abspath(path)), "sweep.json")
    if os.path.exists(info):
        with open(info, encoding="utf-8") as f:
            title = json.load(f).get("scenario", title)
    return title


def load_rows(path):
    """Rows as dicts with their sweep point under "point" (empty without a sweep), and a title."""
    if os.path.isdir(path):
        path = os.path.join(path, "results.jsonl")
    if not os.path.exists(path):
        raise PlotError(f"{path}: no such file (give a sweep --out folder, its results.jsonl or results.csv, or a "
                        "run --json file)")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as error:
        raise PlotError(f"{path}: not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise PlotError(f"{path}: cannot read it ({error.strerror})") from None
    try:
        if path.endswith(".csv"):
            rows, title = csv_rows(text, path), sweep_title(path)
        elif path.endswith(".jsonl"):
            rows = []
            for number, line in enumerate(text.splitlines(), start=1):
                if not line.strip():
                    continue
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise PlotError(f"{path}:{number}: a result row is a JSON object, not {type(row).__name__}")
                rows.append(row)
            title = sweep_title(path)
        else:
            doc = json.loads(text)
            rows = doc["results"]
            title = doc["scenario"]["name"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise PlotError(f"{path}: not tpsim results ({error})") from None
    if not rows:
        raise PlotError(f"{path}: no result rows")
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("point", {}), dict):
            raise PlotError(f"{path}: not tpsim results (a row is not an object with a point)")
        row.setdefault("point", {})
    return rows, title


def number_of(row, column):
    value = row.get(column)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlotError(f"{column} of variant {row.get('variant')} is not a number: {value!r}")
    return value


# Axis labels with units for the axes sweeps use most; any other axis is labelled by its key.
AXIS_LABELS = {
    "workload.seq_len": "sequence length (tokens)",
    "workload.batch": "batch (sequences)",
    "workload.context_len": "context length (tokens)",
    "workload.gen_len": "new tokens per sequence",
    "workload.microbatches": "micro-batches per data-parallel replica",
    "workload.layers": "layers simulated",
    "parallelism.tp": "tensor-parallel degree (GPUs)",
    "parallelism.pp": "pipeline stages",
    "parallelism.dp": "data-parallel replicas",
    "parallelism.ep": "expert-parallel degree (GPUs)",
    "hardware.gpu": "GPU",
    "hardware.nodes": "nodes",
    "hardware.power_limit_W": "GPU power limit (W)",
    "pipeline.schedule": "pipeline schedule",
    "pipeline.virtual_stages": "model chunks per stage",
    "moe.zipf_s": "routing skew (Zipf exponent)",
    "model": "model",
    "variant": "variant",
}


def axis_label(axis):
    """The axis's label with its unit: a known axis, a variant's chunk count, else the key itself."""
    if axis in AXIS_LABELS:
        return AXIS_LABELS[axis]
    parts = axis.split(".")
    if len(parts) == 3 and parts[0] == "variants" and parts[2] == "chunks":
        return f"chunks of {parts[1]} (pieces per GEMM)"
    return axis


def baseline_of(rows):
    """The variant speedups are over: the first variant of the first point (before any --where filter)."""
    first = min(r.get("point_index", 0) for r in rows)
    return next((r["variant"] for r in rows if r.get("point_index", 0) == first), None)


def subtitle(args, rows, baseline):
    """What the figure shows: the filters, the baseline of speedups, auto-chosen chunk counts, hollow points."""
    parts = []
    if args.where:
        parts.append("where " + ", ".join(args.where))
    if args.y == "speedup":
        parts.append(f"baseline: {baseline}")
    if any(r.get("chunks_chosen_by") == "auto" for r in rows):
        parts.append("labels: chunks auto chose")
    if any(r.get("fits_memory") is False for r in rows):
        parts.append("hollow: above the GPU's HBM")
    return "; ".join(parts)


def axis_value(row, axis):
    if axis == "variant":
        return row["variant"]
    if axis not in row["point"]:
        valid = ", ".join(["variant"] + sorted(row["point"].keys()))
        raise PlotError(f"unknown axis '{axis}'; valid: {valid}")
    return row["point"][axis]


def as_number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def filtered(rows, where):
    for clause in where:
        if "=" not in clause:
            raise PlotError(f"--where {clause}: expected AXIS=VALUE")
        axis, value = clause.split("=", 1)
        rows = [r for r in rows if str(axis_value(r, axis)) == value]
        if not rows:
            raise PlotError(f"--where {clause}: no row has that value")
    return rows


def check_single_valued(rows, used):
    for axis in sorted(rows[0]["point"].keys()):
        if axis in used:
            continue
        values = sorted({r["point"][axis] for r in rows}, key=lambda v: (as_number(v) is None, as_number(v) or 0, v))
        if len(values) > 1:
            raise PlotError(f"axis '{axis}' also varies ({', '.join(values)}): fix it with --where {axis}=VALUE or use --by {axis}")


def curves(args, rows, baseline):
    import matplotlib.pyplot as plt

    column, label, scale = Y_COLUMNS[args.y]
    axis_value(rows[0], args.x)  # unknown axes fail first, with the valid ones
    axis_value(rows[0], args.by)
    check_single_valued(rows, {args.x, args.by})
    series = {}
    for row in rows:
        if column not in row:
            raise PlotError(f"--y {args.y}: these results have no {column} (valid here: "
                            + ", ".join(k for k, (c, _, _) in Y_COLUMNS.items() if c in row) + ")")
        series.setdefault(str(axis_value(row, args.by)), []).append(
            (axis_value(row, args.x), number_of(row, column) * scale, row.get("fits_memory") is not False,
             row.get("chunks") if row.get("chunks_chosen_by") == "auto" else None))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    numeric_x = all(as_number(x) is not None for points in series.values() for x, _, _, _ in points)
    # Names (GPUs, models) keep the order the sweep lists them in, not the alphabet's.
    sweep_order = {}
    for row in sorted(rows, key=lambda r: r.get("point_index", 0)):
        sweep_order.setdefault(str(axis_value(row, args.x)), len(sweep_order))
    for name, points in series.items():
        points.sort(key=lambda p: as_number(p[0]) if numeric_x else sweep_order[str(p[0])])
        xs = [as_number(x) if numeric_x else str(x) for x, _, _, _ in points]
        line, = ax.plot(xs, [y for _, y, _, _ in points], marker="o",
                        label=f"{axis_label(args.by)} = {name}" if args.by != "variant" else name)
        for x, (_, y, _, chunks) in zip(xs, points):
            if chunks is not None:  # the count chunks: auto chose at this point
                ax.annotate(f"{chunks:g}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center",
                            fontsize=7, color=line.get_color())
        over = [(x, y) for x, (_, y, fits, _) in zip(xs, points) if not fits]
        if over:  # drawn hollow: the point does not fit the GPU's memory
            ax.plot([x for x, _ in over], [y for _, y in over], linestyle="none", marker="o", markersize=9,
                    markerfacecolor="white", markeredgecolor=line.get_color(), zorder=3)
    if numeric_x and len({x for p in series.values() for x, _, _, _ in p}) > 2:
        values = sorted({as_number(x) for p in series.values() for x, _, _, _ in p})
        if values[0] > 0 and values[-1] / values[0] >= 16:
            ax.set_xscale("log", base=2)
            ax.set_xticks(values)
            ax.set_xticklabels([f"{v:g}" for v in values])
    if args.y == "speedup":
        ax.axhline(1.0, color="grey", linewidth=1, linestyle="--")
    ax.margins(y=0.08)  # room for the chunk counts above the highest points
    ax.set_xlabel(axis_label(args.x))
    ax.set_ylabel(label.replace("the baseline variant", baseline) if baseline else label)
    note = subtitle(args, rows, baseline)
    ax.set_title(args.title + (f"\n{note}" if note else ""), fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def breakdown(args, rows):
    import matplotlib.pyplot as plt

    indexes = sorted({r.get("point_index", 0) for r in rows})
    index = args.point if args.point is not None else indexes[0]
    chosen = [r for r in rows if r.get("point_index", 0) == index]
    if not chosen:
        raise PlotError(f"--point {index}: no such point (valid: {', '.join(map(str, indexes))})")
    names = [r["variant"] for r in chosen]
    compute = [number_of(r, "compute_s") * 1e3 for r in chosen]
    exposed = [number_of(r, "exposed_comm_s") * 1e3 for r in chosen]
    idle = [max(0.0, number_of(r, "time_s") * 1e3 - c - e) for r, c, e in zip(chosen, compute, exposed)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.bar(names, compute, label="compute")
    ax.bar(names, exposed, bottom=compute, label="exposed communication")
    ax.bar(names, idle, bottom=[c + e for c, e in zip(compute, exposed)], label="idle")
    point = ", ".join(f"{k}={v}" for k, v in chosen[0]["point"].items())
    ax.set_title(args.title + (f" ({point})" if point else ""))
    ax.set_ylabel("time per GPU (ms)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    return fig


def plan_document(path):
    """A `tpsim plan --json` document, or None for any other input."""
    if os.path.isdir(path) or not path.endswith(".json") or not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) and "plan" in doc and isinstance(doc.get("rows"), list) else None


def plan_bars(args, doc):
    """The ranked layouts of a plan as horizontal bars: the step's compute, bubble and exposed communication."""
    import matplotlib.pyplot as plt

    rows = doc["rows"]
    if not rows:
        raise PlotError(f"{args.results}: the plan has no ranked rows")
    labels = [f"{r['rank']}. {r['layout']}" for r in rows][::-1]
    parts = [("compute", lambda r: r["time_s"] - r["bubble_fraction"] * r["time_s"] - sum(r["exposed_s"].values())),
             ("bubble", lambda r: r["bubble_fraction"] * r["time_s"])]
    parts += [(f"exposed {d} comm", lambda r, d=d: r["exposed_s"][d]) for d in ("tp", "pp", "dp", "ep")]
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(rows) + 1.5))
    left = [0.0] * len(rows)
    for name, value in parts:
        widths = [max(0.0, value(r)) for r in rows][::-1]
        if any(w > 0 for w in widths):
            ax.barh(labels, widths, left=left, label=name)
            left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("step time (s)")
    ax.set_title(args.title or doc["plan"], fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def serving_front(args, doc):
    """A serving plan: each row as tokens/s per user against tokens/s per GPU (hollow where it misses a target), the
    Pareto front as a line through its points, labelled with their layouts, and the TPOT target as a vertical line."""
    import matplotlib.pyplot as plt

    rows, front = doc["rows"], doc.get("front", [])
    if not rows:
        raise PlotError(f"{args.results}: the plan has no simulated rows")
    fig, ax = plt.subplots(figsize=(9, 6))
    for meets, style in ((True, {"label": "meets the targets"}),
                         (False, {"facecolors": "none", "label": "misses a target"})):
        chosen = [r for r in rows if r["meets_targets"] == meets]
        if chosen:
            ax.scatter([r["tokens_per_s_per_user"] for r in chosen], [r["tokens_per_s_per_gpu"] for r in chosen],
                       edgecolors="tab:blue", s=24, **style)
    if front:
        ax.plot([p["tokens_per_s_per_user"] for p in front], [p["tokens_per_s_per_gpu"] for p in front],
                color="tab:red", label="Pareto front")
        for p in front:
            ax.annotate(p["layout"], (p["tokens_per_s_per_user"], p["tokens_per_s_per_gpu"]), fontsize=7,
                        xytext=(4, 4), textcoords="offset points")
    tpot = doc.get("targets", {}).get("tpot_s")
    if tpot:
        ax.axvline(1.0 / tpot, color="gray", linestyle="--", label=f"TPOT target {tpot * 1e3:g} ms")
    ax.set_xlabel("output tokens/s per user (1 / TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(args.title or doc["plan"], fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def main(argv):
    parser = argparse.ArgumentParser(prog="tpsim plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="sweep output folder, its results.jsonl, a tpsim run --json file, or a tpsim "
                        "plan --json file (the ranked layouts as bars; a serving plan's rows against its Pareto front)")
    parser.add_argument("--x", help="sweep axis on the x axis (e.g. workload.batch)")
    parser.add_argument("--y", choices=sorted(Y_COLUMNS), default="speedup", help="quantity on the y axis")
    parser.add_argument("--by", default="variant", help="one line per variant (default) or per value of an axis")
    parser.add_argument("--where", action="append", default=[], metavar="AXIS=VALUE", help="keep only these rows")
    parser.add_argument("--breakdown", action="store_true", help="stacked compute / exposed comm / idle bars")
    parser.add_argument("--point", type=int, help="with --breakdown: the point index (default: the first)")
    parser.add_argument("--title", help="figure title (default: the scenario or folder name)")
    parser.add_argument("-o", "--out", default="tpsim_plot.png", help="output file, .png or .svg")
    args = parser.parse_args(argv)
    try:
        if not args.out.endswith((".png", ".svg")):
            raise PlotError(f"-o {args.out}: the output must end in .png or .svg")
        out_dir = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(out_dir):
            raise PlotError(f"-o {args.out}: no folder {out_dir}")
        plan = plan_document(args.results)
        if not plan:
            rows, title = load_rows(args.results)
            args.title = args.title or title
            baseline = baseline_of(rows)
            rows = filtered(rows, args.where)
            if not args.breakdown and not args.x:
                raise PlotError("--x AXIS is required (or --breakdown)")
        try:
            import matplotlib

            matplotlib.use("Agg")
        except ImportError:
            raise PlotError("matplotlib is missing: install python3-matplotlib (tools/setup.sh does)") from None
        if plan:
            fig = serving_front(args, plan) if plan.get("kind") == "serving" else plan_bars(args, plan)
        else:
            fig = breakdown(args, rows) if args.breakdown else curves(args, rows, baseline)
        fig.tight_layout()
        # Fixed metadata so the same results give the same bytes.
        metadata = {"Date": None} if args.out.endswith(".svg") else {"Software": "tpsim plot"}
        if args.out.endswith(".svg"):
            import matplotlib as mpl

            mpl.rcParams["svg.hashsalt"] = "tpsim"
            mpl.rcParams["svg.fonttype"] = "none"  # labels as text: searchable, editable, smaller
        try:
            fig.savefig(args.out, dpi=120, metadata=metadata)
        except OSError as error:
            raise PlotError(f"-o {args.out}: cannot write it ({error.strerror})") from None
        print(f"tpsim plot: wrote {args.out}")
        return 0
    except PlotError as error:
        print(f"tpsim plot: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
