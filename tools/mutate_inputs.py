#!/usr/bin/env python3
"""Replays the mutation classes of the hardening issue against the tpsim binary.

Each case mutates a valid input (a scenario, an inline model and GPU, a profile, measurement lines, a
config.json, an nccl-tests log) or an output path, runs the command that reads it, and accepts only exit 0,
or exit 2 with one stderr line "tpsim: error: ..." and no output file. Anything else (another exit code, a
signal, a hang, a two-line message, a half-written output) is a finding. Classes: complex keys, encodings,
huge and non-finite numbers, overflowing products, duplicate keys, a second document, sections given as scalars or
lists, special output paths, several outputs of which one fails, concurrent sweeps; over a single-node scenario, a
pipelined MoE job (symmetric and --no-symmetry) and a profile with nested sections.

  mutate_inputs.py --tpsim PATH [--quick] [--jobs N]     (exit 1 on any finding)
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUICK_CASES = 90  # --quick runs an evenly spaced sample of this many mutations (plus outputs and sweeps)
TIMEOUT_S = 120

SCENARIO = b"""name: m
model: qwen3-0.6b
hardware: {gpu: h100-sxm, topology: nvswitch, nodes: 1}
workload: {phase: forward, batch: 2, seq_len: 512, layers: 1}
parallelism: {tp: 8}
variants:
  - {name: sp, tp_mode: sp}
  - {name: async, tp_mode: async, chunks: 8}
  - {name: dtp, tp_mode: dtp, delta: 1}
sweep:
  workload.batch: [1, 2]
"""
INLINE = b"""name: inline
model: {hidden_size: 1024, intermediate_size: 3072, num_attention_heads: 16, num_key_value_heads: 8,
  num_hidden_layers: 2, vocab_size: 1000}
hardware: {gpu: {name: g, peak_bf16_tflops: 989, hbm_GBps: 3350, sm_count: 132, nvlink_GBps: 450}}
calibration: p.yaml
workload: {phase: generate, batch: 8, context_len: 128, gen_len: 4, layers: 1}
parallelism: {tp: 4}
variants: [{name: tp, tp_mode: tp}]
"""
PROFILE = b"""gpu: g
base: h100-sxm
gemm: {efficiency: 0.7, tile_m: 128, overhead_us: 2}
launch: {host_us: 2.5, stream_wait_us: 1}
nccl: {step_latency_us: 5, link_efficiency: 0.8, sms: 16}
"""
MEASUREMENTS = b"""{"kind":"gemm","gpu":"h100-sxm","m":4096,"n":4096,"k":4096,"dtype":"bf16","median_s":0.0002}
{"kind":"gemm","gpu":"h100-sxm","m":1024,"n":4096,"k":4096,"dtype":"bf16","median_s":0.00006}
{"kind":"gemm","gpu":"h100-sxm","m":8192,"n":8192,"k":4096,"dtype":"bf16","median_s":0.0008}
{"kind":"collective","gpu":"h100-sxm","collective":"allreduce","ranks":8,"bytes":1048576,"median_s":0.00003}
"""
HF_SCENARIO = SCENARIO.split(b"sweep:")[0].replace(b"model: qwen3-0.6b", b"model: {hf_config: c.json}")
# An MoE job under a pipeline placed tp, pp, dp, with skewed routing and a power limit (run symmetric and whole).
PIPELINE = b"""name: pp
model: qwen3-30b-a3b
hardware: {gpu: h100-sxm, topology: ib-rail, nodes: 1, power_limit_W: 600}
calibration: n.yaml
workload: {phase: train, batch: 2, seq_len: 1024, layers: 4, microbatches: 4}
parallelism: {tp: 1, pp: 2, dp: 2, order: [tp, pp, dp]}
pipeline: {schedule: zb-v, virtual_stages: 2}
moe: {routing: zipf, zipf_s: 1.2, seed: 3}
variants:
  - {name: sp, tp_mode: sp}
  - {name: none, tp_mode: nocomm}
"""
# A profile whose sections nest (regimes, kernels, low-latency kernels, the power curve).
NESTED_PROFILE = b"""gpu: h100-sxm
base: h100-sxm
attention: {kernels: {fa3: {efficiency: 0.6, backward_efficiency: 0.5}}}
nccl: {step_latency_us: 5, ll: {step_latency_us: 3, link_efficiency: 0.3}, fit: {values: [step_latency_us], points: 4}}
deepep: {low_latency: {rdma_efficiency: 0.5, rdma_latency_us: 20}}
power: {idle_W: 70, exponent: 2.5, measured_at_W: 700}
tree: {step_latency_us: 8, link_efficiency: 0.7, chunk_bytes: 65536}
"""
FLOW_MAPPING = re.compile(rb"(?<=: )\{[^{}]*\}")
NUMBER = re.compile(rb"(?<=[\s\[{,:])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?=[\s,\]}]|$)", re.M)
YAML_NUMBERS = [b"0", b"-1", b"0.5", b"1e308", b"-1e308", b"1e309", b".nan", b".inf", b"-.inf", b"2147483648",
                b"4294967297", b"9223372036854775807", b"9223372036854775808", b"1e-300", b"[1]", b"{a: 1}", b"x"]
JSON_NUMBERS = [b"0", b"-1", b"0.5", b"1e308", b"1e309", b"-1e309", b"9223372036854775808", b"18446744073709551616",
                b"1e-300", b'"x"', b"{}", b"[]", b"null", b"true"]
BAD_TEXT = [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\x00", b"\x01\n", b"\\u0000", b"\xf4\x90\x80\x80"]


@dataclass
class Case:
    label: str
    files: dict  # name -> bytes, written to a fresh folder
    args: list  # tpsim arguments; {dir} is the folder
    output: str = ""  # a file the command writes; it must not exist after a refusal
    stdout: str = ""  # a path stdout goes to instead of a pipe
    findings: list = field(default_factory=list)


def numbers(label, name, text, replacements, files, args, output=""):
    for i, match in enumerate(NUMBER.finditer(text)):
        for value in replacements:
            mutated = text[: match.start()] + value + text[match.end():]
            yield Case(f"{label} number {i} -> {value!r}", {**files, name: mutated}, args, output)


def yaml_cases(label, name, text, files, args, output=""):
    yield from numbers(label, name, text, YAML_NUMBERS, files, args, output)
    lines = text.split(b"\n")
    for i, line in enumerate(lines):
        if line and not line.startswith(b" "):  # duplicate keys: every top-level line twice
            yield Case(f"{label} line {i} twice", {**files, name: b"\n".join(lines[: i + 1] + lines[i:])}, args, output)
    for bad in BAD_TEXT:  # encodings, raw and as YAML escapes, in a value and in a key
        yield Case(f"{label} bytes {bad!r} in a value", {**files, name: text.replace(b": ", b": a" + bad, 1)}, args,
                   output)
        yield Case(f"{label} bytes {bad!r} quoted", {**files, name: text.replace(b": ", b': "a' + bad + b'" #', 1)},
                   args, output)
    yield Case(f"{label} complex key", {**files, name: text + b"? [a]\n: 1\n"}, args, output)
    yield Case(f"{label} complex flow key", {**files, name: text.replace(b": {", b": {? [x] : 1, ", 1)}, args, output)
    yield Case(f"{label} block scalar", {**files, name: text.replace(b": ", b": |\n  two\n  lines\n#", 1)}, args,
               output)
    yield Case(f"{label} alias bomb", {**files, name: text + alias_bomb()}, args, output)
    yield Case(f"{label} second document", {**files, name: text + b"---\n" + text}, args, output)
    for i, match in enumerate(FLOW_MAPPING.finditer(text)):  # a section given as a scalar or a list
        for value in (b"5", b"[1]", b"''"):
            mutated = text[: match.start()] + value + text[match.end():]
            yield Case(f"{label} mapping {i} -> {value!r}", {**files, name: mutated}, args, output)


def alias_bomb():
    out = b"bomb0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 9):
        out += b"bomb%d: &a%d [" % (i, i) + b", ".join([b"*a%d" % (i - 1)] * 10) + b"]\n"
    return out


def json_cases(label, name, text, files, args, output=""):
    yield from numbers(label, name, text, JSON_NUMBERS, files, args, output)
    for bad in BAD_TEXT:
        yield Case(f"{label} bytes {bad!r} in a string", {**files, name: text.replace(b'":"', b'":"' + bad, 1)}, args,
                   output)


def input_cases():
    run = ["run", "{dir}/s.yaml", "-q", "--json", "{dir}/out.json"]
    yield from yaml_cases("scenario", "s.yaml", SCENARIO, {}, run, "out.json")
    yield from yaml_cases("inline", "s.yaml", INLINE, {"p.yaml": PROFILE}, run, "out.json")
    yield from yaml_cases("profile", "p.yaml", PROFILE, {"s.yaml": INLINE}, run, "out.json")
    for batch, length in [(b"4294967296", b"4294967296"), (b"3037000500", b"3037000500"), (b"1", b"9223372036854775807")]:
        text = SCENARIO.replace(b"batch: 2, seq_len: 512", b"batch: " + batch + b", seq_len: " + length)
        yield Case(f"product {batch.decode()} x {length.decode()}", {"s.yaml": text}, run, "out.json")
    for symmetry in ([], ["--no-symmetry"]):
        yield from yaml_cases("pipeline" + "".join(symmetry), "s.yaml", PIPELINE, {"n.yaml": NESTED_PROFILE},
                              run + symmetry, "out.json")
    yield from yaml_cases("nested profile", "n.yaml", NESTED_PROFILE, {"s.yaml": PIPELINE}, run, "out.json")
    calibrate = ["calibrate", "{dir}/m.jsonl", "-o", "{dir}/out.yaml"]
    yield from json_cases("measurements", "m.jsonl", MEASUREMENTS, {}, calibrate, "out.yaml")
    config = (ROOT / "tests/model/hf_configs/qwen3-8b.json").read_bytes()
    yield from json_cases("config.json", "c.json", config, {"s.yaml": HF_SCENARIO}, run, "out.json")
    log = (ROOT / "tests/fuzz/seeds/nccl_log/all_reduce_perf.log").read_bytes()
    yield from numbers("nccl log", "all_reduce_perf.log", log, [b"nan", b"inf", b"-1", b"0.5", b"1e309", b"1e300"],
                       {}, ["calibrate", "{dir}/all_reduce_perf.log", "-o", "{dir}/out.yaml"], "out.yaml")


def output_cases():
    base = {"s.yaml": SCENARIO}
    run = ["run", "{dir}/s.yaml", "-q"]
    yield Case("json to /dev/null", base, run + ["--json", "/dev/null"])
    yield Case("json to a folder", base, run + ["--json", "{dir}"])
    yield Case("json in a missing folder", base, run + ["--json", "{dir}/no/such/out.json"], "no/such/out.json")
    yield Case("json to a name past NAME_MAX", base, run + ["--json", "{dir}/" + "n" * 300])
    yield Case("json through a symlink", {**base, "->link.json": b"target.json"}, run + ["--json", "{dir}/link.json"])
    yield Case("json into a FIFO", {**base, "|fifo": b""}, run + ["--json", "{dir}/fifo"])
    yield Case("trace to /dev/full", base, run + ["--trace", "/dev/full"])
    yield Case("stdout to /dev/full", base, ["run", "{dir}/s.yaml"], stdout="/dev/full")
    # Several outputs: all or none.
    yield Case("json beside csv to /dev/full", base, run + ["--json", "{dir}/out.json", "--csv", "/dev/full"],
               "out.json")
    yield Case("json beside a trace in a missing folder", base,
               run + ["--json", "{dir}/out.json", "--trace", "{dir}/no/such/t.json"], "out.json")
    yield Case("json to an empty path", base, run + ["--json", ""])
    yield Case("convert to stdout", {}, ["calibrate", "convert", str(ROOT / "calibrate/data/public"), "-o", "-"])


def prepare(case, folder):
    for name, content in case.files.items():
        if name.startswith("->"):
            os.symlink(content.decode(), folder / name[2:])
        elif name.startswith("|"):
            os.mkfifo(folder / name[1:])
            threading.Thread(target=lambda p=folder / name[1:]: Path(p).read_bytes(), daemon=True).start()
        else:
            (folder / name).write_bytes(content)


def run_case(tpsim, case):
    with tempfile.TemporaryDirectory(prefix="tpsim_mutate_") as tmp:
        folder = Path(tmp)
        prepare(case, folder)
        args = [tpsim] + [a.replace("{dir}", tmp) for a in case.args]
        stdout = open(case.stdout, "wb") if case.stdout else subprocess.PIPE
        try:
            proc = subprocess.run(args, stdout=stdout, stderr=subprocess.PIPE, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            case.findings.append(f"no answer within {TIMEOUT_S} s")
            return case
        finally:
            if case.stdout:
                stdout.close()
        judge(case, proc.returncode, proc.stderr.decode("utf-8", "replace"), folder)
    return case


def judge(case, code, err, folder):
    if code < 0:
        case.findings.append(f"killed by signal {-code}")
    elif code not in (0, 2):
        case.findings.append(f"exit {code}: {err.strip()[:300]}")
    elif code == 2 and (err.count("\n") != 1 or not err.startswith("tpsim: error: ")):
        case.findings.append(f"not one error line: {err[:300]!r}")
    elif code == 2 and case.output and (folder / case.output).exists():
        case.findings.append(f"refused, but {case.output} was written")
    elif case.stdout == "/dev/full" and code == 0:
        case.findings.append("a failed write to stdout exited 0")


def concurrent_sweeps(tpsim, rounds):
    """Two sweeps into one folder at once: each exits 0 or 2 (the folder is locked), the results are whole."""
    findings = []
    for r in range(rounds):
        with tempfile.TemporaryDirectory(prefix="tpsim_mutate_sweep_") as tmp:
            scenario = Path(tmp) / "s.yaml"
            scenario.write_bytes(SCENARIO)
            args = [tpsim, "sweep", str(scenario), "-o", f"{tmp}/out", "-j", "1", "--no-progress"]
            procs = [subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(2)]
            codes = [p.wait(timeout=TIMEOUT_S) for p in procs]
            errs = [p.stderr.read().decode() for p in procs]
            rows = (Path(tmp) / "out/results.csv").read_text().count("\n") if 0 in codes else 0
            if any(c not in (0, 2) for c in codes) or 0 not in codes or rows != 1 + 2 * 3:
                findings.append(f"concurrent sweeps round {r}: exits {codes}, {rows} CSV lines, {errs}")
    return findings


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tpsim", required=True)
    parser.add_argument("--quick", action="store_true", help=f"an evenly spaced sample of {QUICK_CASES} mutations")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    cases = list(input_cases())
    if args.quick and len(cases) > QUICK_CASES:
        cases = [cases[i * len(cases) // QUICK_CASES] for i in range(QUICK_CASES)]
    cases += list(output_cases())
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = list(pool.map(lambda c: run_case(args.tpsim, c), cases))
    findings = [f"{c.label}: {f}" for c in done for f in c.findings]
    findings += concurrent_sweeps(args.tpsim, 1 if args.quick else 5)
    for finding in findings:
        print("FINDING", finding)
    print(f"{len(done)} mutated inputs and outputs and the concurrent sweeps: {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
