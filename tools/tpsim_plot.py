#!/usr/bin/env python3
"""Plots tpsim results: speedup (or time, exposed communication, tokens/s) curves over a sweep axis,
one line per variant or per value of another axis; or a stacked breakdown of one point's time.

Input: a `tpsim sweep` output folder (or its results.jsonl), or a `tpsim run --json` file.
Run through `tpsim plot ...` or directly: python3 tools/tpsim_plot.py RESULTS --x AXIS ...
"""
import argparse
import json
import os
import sys

Y_COLUMNS = {
    "speedup": ("speedup", "speedup over the baseline variant (x)", 1.0),
    "time": ("time_s", "time (ms)", 1e3),
    "exposed_comm": ("exposed_comm_s", "exposed communication (ms)", 1e3),
    "tokens_per_s": ("tokens_per_s", "tokens / s", 1.0),
    "ttft": ("ttft_s", "time to first token (ms)", 1e3),
    "tpot": ("tpot_s", "time per output token (ms)", 1e3),
}


class PlotError(Exception):
    pass


def load_rows(path):
    """Rows as dicts with their sweep point under "point" (empty without a sweep), and a title."""
    if os.path.isdir(path):
        path = os.path.join(path, "results.jsonl")
    if not os.path.exists(path):
        raise PlotError(f"{path}: no such file (give a sweep --out folder, its results.jsonl, or a run --json file)")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        if path.endswith(".jsonl"):
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
            info = os.path.join(os.path.dirname(os.path.abspath(path)), "sweep.json")
            title = os.path.basename(os.path.dirname(os.path.abspath(path)))
            if os.path.exists(info):
                with open(info, encoding="utf-8") as f:
                    title = json.load(f).get("scenario", title)
        else:
            doc = json.loads(text)
            rows = doc["results"]
            title = doc["scenario"]["name"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise PlotError(f"{path}: not tpsim results ({error})") from None
    if not rows:
        raise PlotError(f"{path}: no result rows")
    for row in rows:
        row.setdefault("point", {})
    return rows, title


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


def curves(args, rows):
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
        series.setdefault(str(axis_value(row, args.by)), []).append((axis_value(row, args.x), row[column] * scale))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    numeric_x = all(as_number(x) is not None for points in series.values() for x, _ in points)
    # Names (GPUs, models) keep the order the sweep lists them in, not the alphabet's.
    sweep_order = {}
    for row in sorted(rows, key=lambda r: r.get("point_index", 0)):
        sweep_order.setdefault(str(axis_value(row, args.x)), len(sweep_order))
    for name, points in series.items():
        points.sort(key=lambda p: as_number(p[0]) if numeric_x else sweep_order[str(p[0])])
        xs = [as_number(x) if numeric_x else str(x) for x, _ in points]
        ax.plot(xs, [y for _, y in points], marker="o", label=f"{args.by} = {name}" if args.by != "variant" else name)
    if numeric_x and len({x for p in series.values() for x, _ in p}) > 2:
        values = sorted({as_number(x) for p in series.values() for x, _ in p})
        if values[0] > 0 and values[-1] / values[0] >= 16:
            ax.set_xscale("log", base=2)
            ax.set_xticks(values)
            ax.set_xticklabels([f"{v:g}" for v in values])
    if args.y == "speedup":
        ax.axhline(1.0, color="grey", linewidth=1, linestyle="--")
    ax.set_xlabel(args.x)
    ax.set_ylabel(label)
    ax.set_title(args.title)
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
    compute = [r["compute_s"] * 1e3 for r in chosen]
    exposed = [r["exposed_comm_s"] * 1e3 for r in chosen]
    idle = [max(0.0, r["time_s"] * 1e3 - c - e) for r, c, e in zip(chosen, compute, exposed)]
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


def main(argv):
    parser = argparse.ArgumentParser(prog="tpsim plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="sweep output folder, its results.jsonl, or a tpsim run --json file")
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
        rows, title = load_rows(args.results)
        args.title = args.title or title
        rows = filtered(rows, args.where)
        if not args.breakdown and not args.x:
            raise PlotError("--x AXIS is required (or --breakdown)")
        try:
            import matplotlib

            matplotlib.use("Agg")
        except ImportError:
            raise PlotError("matplotlib is missing: install python3-matplotlib (tools/setup.sh does)") from None
        fig = breakdown(args, rows) if args.breakdown else curves(args, rows)
        fig.tight_layout()
        # Fixed metadata so the same results give the same bytes.
        metadata = {"Date": None} if args.out.endswith(".svg") else {"Software": "tpsim plot"}
        if args.out.endswith(".svg"):
            import matplotlib as mpl

            mpl.rcParams["svg.hashsalt"] = "tpsim"
            mpl.rcParams["svg.fonttype"] = "none"  # labels as text: searchable, editable, smaller
        fig.savefig(args.out, dpi=120, metadata=metadata)
        print(f"tpsim plot: wrote {args.out}")
        return 0
    except PlotError as error:
        print(f"tpsim plot: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
