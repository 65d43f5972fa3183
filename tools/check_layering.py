#!/usr/bin/env python3
"""Checks the folder dependency rules of docs/architecture.md on every #include line, and that no source folder holds
more than MAX_MODULES modules at one level. Prints one line per offending include (file:line: include, the rule) and
exits 1; exits 0 when the tree keeps the rules. `--self-test` runs the check over tests/layering/fixture, whose planted
violations it must find, each of them and nothing else.
Usage: tools/check_layering.py [--root DIR] | --self-test"""
import pathlib
import re
import sys

# Folder -> the folders its files may include (besides the standard library, nlohmann, CLI11, SimGrid, Boost and Eigen).
# A folder named here covers its subfolders unless a subfolder has its own rule. Only input/ may include yaml-cpp.
RULES = {
    "base": ["base"],
    "model": ["base", "model"],
    "input": ["base", "model", "sim/cost", "input"],
    "sim/cost": ["base", "model", "sim/cost"],
    "sim/engine": ["base", "model", "sim/cost", "sim/engine"],
    "sim/report": ["base", "model", "sim"],
    "sim/run": ["base", "model", "input", "sim"],
    "calibrate": ["base", "model", "sim", "calibrate"],
    "shard": ["base", "model", "input", "shard"],
    "plan": ["base", "model", "input", "sim", "plan"],
    "cli": ["base", "model", "input", "sim", "calibrate", "shard", "plan", "cli"],
    "real": ["base", "model", "input", "sim", "real"],
}
YAML_FOLDERS = ["input"]
# Known exceptions, each with its reason: "file -> include". The check fails on one that no longer occurs, so the
# list only shrinks.
ALLOWED = pathlib.Path(__file__).with_name("layering_allowed.txt")
MAX_MODULES = 15
MODULE_FOLDERS = ["base", "input", "model", "sim", "calibrate", "cli", "shard", "plan"]
PROJECT = ["base", "input", "model", "sim", "calibrate", "cli", "shard", "plan", "real"]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def rule_of(path):
    parts = path.split("/")
    for n in range(len(parts) - 1, 0, -1):
        key = "/".join(parts[:n])
        if key in RULES:
            return key
    return None


def covered(target, allowed):
    return any(target == a or target.startswith(a + "/") for a in allowed)


def violations(root):
    found = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".cu", ".cuh") or "build" in path.relative_to(root).parts[:1]:
            continue
        rel = path.relative_to(root).as_posix()
        rule = rule_of(rel)
        if rule is None:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            if inc.startswith("yaml-cpp/"):
                if not covered(rule, YAML_FOLDERS):
                    found.append((rel, number, inc, "only input/ includes yaml-cpp"))
            elif inc.split("/")[0] in PROJECT and "/" in inc and not covered(inc, RULES[rule]):
                found.append((rel, number, inc, f"{rule}/ may include {', '.join(f'{a}/' for a in RULES[rule])}"))
    return found


def crowded(root):
    found = []
    for top in MODULE_FOLDERS:
        for folder in [root / top, *(p for p in (root / top).rglob("*") if p.is_dir())]:
            if not folder.is_dir():
                continue
            stems = {p.stem for p in folder.iterdir() if p.suffix in (".cpp", ".hpp")}
            if len(stems) > MAX_MODULES:
                found.append(f"{folder.relative_to(root).as_posix()}/: {len(stems)} modules, more than {MAX_MODULES}")
    return found


def allowed_list(path):
    if not path.exists():
        return set()
    entries = set()
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            entries.add(tuple(s.strip() for s in line.split("->")))
    return entries


def check(root, allowed_path):
    allowed = allowed_list(allowed_path)
    bad = 0
    seen = set()
    for rel, number, inc, why in violations(root):
        if (rel, inc) in allowed:
            seen.add((rel, inc))
            continue
        print(f"{rel}:{number}: #include <{inc}>: {why} (docs/architecture.md)")
        bad += 1
    for rel, inc in sorted(allowed - seen):
        print(f"{allowed_path.name}: '{rel} -> {inc}' no longer occurs: remove it from the list")
        bad += 1
    for line in crowded(root):
        print(line)
        bad += 1
    return bad


def self_test(repo):
    fixture = repo / "tests" / "layering" / "fixture"
    lines = []
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bad = check(fixture, fixture / "allowed.txt")
    lines = out.getvalue().splitlines()
    expected = [
        "allowed.txt: 'model/b.hpp -> sim/engine/gone.hpp' no longer occurs: remove it from the list",
        "base/a.hpp:3: #include <model/graph/op.hpp>: base/ may include base/ (docs/architecture.md)",
        "sim/engine/c.cpp:2: #include <yaml-cpp/yaml.h>: only input/ includes yaml-cpp (docs/architecture.md)",
    ]
    if sorted(lines) != expected or bad != len(expected):
        print("self-test: the planted violations were not reported as expected; got:", *lines, sep="\n  ")
        return 1
    print(f"self-test: the {bad} planted violations are reported, and the allowed include is not")
    return 0


def main(argv):
    repo = pathlib.Path(__file__).resolve().parent.parent
    if argv[1:] == ["--self-test"]:
        return self_test(repo)
    root = pathlib.Path(argv[2]) if argv[1:2] == ["--root"] else repo
    bad = check(root, ALLOWED)
    if bad:
        print(f"{bad} layering violation(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
