"""What every docs table shares: the tpsim binary and the shipped scenarios' runs, and markdown rows."""
import concurrent.futures
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
TPSIM = os.environ.get("TPSIM", str(ROOT / "build/cli/tpsim"))
MEASUREMENTS = "calibrate/data/measurements/"


def tpsim(*args):
    return subprocess.run([TPSIM, *args], cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout


def shipped(name):
    """The path of the shipped scenario NAME (scenarios/TOPIC/NAME.yaml), relative to the repository."""
    (path,) = (ROOT / "scenarios").glob(f"*/{name}.yaml")
    return str(path.relative_to(ROOT))


def results(scenario):
    """The JSON of `tpsim run` on scenarios/TOPIC/SCENARIO.yaml, or on SCENARIO where it is a path to a .yaml file."""
    path = scenario if scenario.endswith(".yaml") else shipped(scenario)
    return json.loads(tpsim("run", path, "--json", "-"))


def results_of(scenarios):
    """results() of each scenario, run side by side."""
    with concurrent.futures.ThreadPoolExecutor() as pool:
        return list(pool.map(results, scenarios))


def by_variant(rows):
    return {r["variant"]: r for r in rows}


def ms(seconds, digits=1):
    return f"{seconds * 1e3:.{digits}f}"


def gib(size):
    return f"{size / 2**30:.1f}"


def header(*columns):
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def row(*cells):
    print("| " + " | ".join(str(c) for c in cells) + " |")
