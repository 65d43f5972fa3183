#!/usr/bin/env python3
"""Checks, or rewrites, every command output that README.md, docs/*.md and the GPU runs' READMEs quote.

A quoted output is annotated in one of two ways:

  ```text                                  <!-- output of: COMMAND -->
  $ COMMAND                                (markdown: tables, headings, prose)
  (its output)                             <!-- end of output -->
  ```

COMMAND runs with bash from the repository root, `tpsim` on the PATH being the binary under test
(also in $TPSIM, for scripts). Its stdout and stderr together must equal the quoted text exactly
(blank lines at either end aside), and it must exit 0, or N where the command ends with `# exit N`.

A number in prose is checked the same way when an annotation follows it (after its unit, bold included):

  the async variant gains **1.034x**<!-- value of: tpsim run S.yaml --json - => r("async", "speedup") -->

COMMAND runs as above (once, however many numbers read it); EXPR is a Python expression that gives the number as the
text shows it (scaled: `r("sp", "time_s") * 1e3` for milliseconds). In EXPR, `j` is COMMAND's stdout parsed as JSON,
`t` the text itself, `r(VARIANT, FIELD, "AXIS=VALUE", ...)` the field (a dotted path) of the one result row of
`tpsim run --json` with that variant at those sweep values ("AXIS~TEXT": a value that holds TEXT), and
`num(REGEX)` the number REGEX's first group matches in `t`. The number keeps its decimals, thousands separators and
sign as written: a stale one fails the check, and update rewrites it. A number in prose written as tpsim writes its
results (4506.979 ms, 1.034x) fails the check without an annotation: its value, or <!-- published -->,
<!-- history --> or <!-- tested: FILE --> after it.

  doc_outputs.py check  [--tpsim PATH] [FILE...]   fails, with a diff, on any block or number that differs
  doc_outputs.py update [--tpsim PATH] [FILE...]   rewrites every block and number from its command
"""
import argparse
import concurrent.futures
import difflib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- output of: (.+) -->$")
END_MARKER = "<!-- end of output -->"
EXIT = re.compile(r"#\s*exit (\d+)\s*$")
# A number as prose writes it, its unit and closing bold, then its annotation.
# The expression follows the annotation's last " => " (no "|": a number may sit in a table's cell).
VALUE = re.compile(r"(?P<number>[-+]?\d[\d,]*(?:\.\d+)?)(?P<unit>[^<\d]{0,20}?)<!-- value of: "
                   r"(?P<command>(?:(?!-->).)+) => (?P<expr>(?:(?!-->).)+?) -->")


def shown(path):
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@dataclass
class Block:
    path: Path
    first: int  # index of the first quoted line
    end: int  # index one past the last quoted line
    command: str

    def where(self):  # the line of its annotation: the one before the quoted text, counted from 1
        return f"{shown(self.path)}:{self.first}"


def blocks_of(path):
    """The annotated blocks of one markdown file, in order."""
    lines = path.read_text().split("\n")
    found, i = [], 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if lines[i].startswith("```"):
            close = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            if lines[i] == "```text" and i + 1 < close and lines[i + 1].startswith("$ "):
                found.append(Block(path, i + 2, close, lines[i + 1][2:]))
            i = close + 1
        elif marker:
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == END_MARKER), None)
            if end is None:
                sys.exit(f"{shown(path)}:{i + 1}: '{lines[i]}' has no '{END_MARKER}' after it")
            found.append(Block(path, i + 1, end, marker.group(1)))
            i = end + 1
        else:
            i += 1
    return found


@dataclass
class Value:
    path: Path
    line: int  # index of its line
    start: int  # where its number starts and ends in the line
    end: int
    number: str
    command: str
    expr: str

    def where(self):
        return f"{shown(self.path)}:{self.line + 1}"


CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def prose(line):
    """The line with its inline code spans blanked (their columns kept): examples there are not the doc's numbers."""
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def values_of(path, blocks):
    """The annotated numbers of one markdown file outside its quoted blocks, in order."""
    lines = path.read_text().split("\n")
    quoted = {i for b in blocks for i in range(b.first - 1, b.end + 1)}
    found, fenced = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or i in quoted:
            continue
        for m in VALUE.finditer(prose(line)):
            found.append(Value(path, i, m.start("number"), m.end("number"), m.group("number"), m.group("command"),
                               m.group("expr")))
    return found


# Numbers written as tpsim writes its results: times to the microsecond ("4506.979 ms", "6.657 s") and speedups
# ("1.034x", "1.17x"). In prose each needs an annotation after it: its value (above), or why it is not one of tpsim's
# outputs: <!-- published -->, <!-- history --> (what a number was before a change), <!-- tested: FILE --> (a test
# bounds it instead).
RESULT_LIKE = re.compile(r"(?<![\w.~-])(?:\d+\.\d{3} m?s|\d+\.\d{2,3}x)(?![\w])")
CLASSIFIED = re.compile(r"\**<!-- (?:value of: |published -->|history -->|tested: )")


def unannotated(path, blocks):
    """Result-like numbers of one markdown file's prose without an annotation: (line index, number)."""
    lines = path.read_text().split("\n")
    quoted = {i for b in blocks for i in range(b.first - 1, b.end + 1)}
    found, fenced = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or i in quoted:
            continue
        text = prose(line)
        found += [(i, m.group(0)) for m in RESULT_LIKE.finditer(text) if not CLASSIFIED.match(text, m.end())]
    return found


def evaluate(value, output):
    """The number EXPR gives from COMMAND's output, or raises ValueError naming what went wrong."""
    try:
        doc = json.loads(output)
    except json.JSONDecodeError:
        doc = None

    def matches(row, axis):  # "AXIS=VALUE" exactly, or "AXIS~TEXT": the value holds TEXT
        name, equal, value = re.match(r"([^=~]+)([=~])(.*)", axis).groups()
        held = str(row.get("point", {}).get(name))
        return held == value if equal == "=" else value in held

    def r(variant, field, *axes):
        wanted = list(axes)
        rows = [row for row in (doc or {}).get("results", []) if row.get("variant") == variant and
                all(matches(row, a) for a in axes)]
        if len(rows) != 1:
            raise ValueError(f"{len(rows)} result rows of variant {variant} at {wanted or 'no sweep values'}")
        item = rows[0]
        for key in field.split("."):
            if not isinstance(item, dict) or key not in item:
                raise ValueError(f"no {field} in the row of variant {variant}")
            item = item[key]
        return item

    def num(pattern):
        match = re.search(pattern, output, re.MULTILINE)
        if not match:
            raise ValueError(f"nothing in the output matches {pattern}")
        return float(match.group(1).replace(",", ""))

    try:
        result = eval(value.expr, {"__builtins__": {"abs": abs, "min": min, "max": max, "sum": sum, "len": len}},
                      {"j": doc, "t": output, "r": r, "num": num})
    except ValueError:
        raise
    except Exception as error:  # a typo in an annotation: say where
        raise ValueError(f"{type(error).__name__}: {error}") from None
    if isinstance(result, bool) or not isinstance(result, (int, float)):
        raise ValueError(f"the expression gives {result!r}, not a number")
    return float(result)


def formatted(number, like):
    """`number` written as `like` is: its decimals, thousands separators and explicit sign."""
    decimals = len(like.split(".")[1]) if "." in like else 0
    spec = ("+" if like.startswith("+") else "") + ("," if "," in like else "") + f".{decimals}f"
    text = format(number, spec)
    return text.replace("-", "") if float(text.replace(",", "")) == 0 else text  # no "-0.0"


def run(block, env):
    """The command's output (stdout and stderr as they interleave), or an error line."""
    result = subprocess.run(["bash", "-c", block.command], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    declared = EXIT.search(block.command)
    expected_exit = int(declared.group(1)) if declared else 0
    if result.returncode != expected_exit:
        return None, f"{block.where()}: '{block.command}' exited {result.returncode}, not {expected_exit}:\n" + \
            result.stdout
    return result.stdout, None


def quoted(block, lines):
    return "\n".join(lines[block.first:block.end]).strip("\n")


def difference(block, lines, output):
    """A readable diff of the quoted text against the output now, or None where they agree."""
    if quoted(block, lines) == output.strip("\n"):
        return None
    diff = difflib.unified_diff(quoted(block, lines).split("\n"), output.strip("\n").split("\n"), "quoted",
                                "output now", lineterm="", n=1)
    return f"{block.where()}: the output of '{block.command}' differs:\n" + "\n".join(diff)


def rewrite(path, results, numbers):
    """Writes each number as it should read, then each block's output, from the last block up so that line numbers
    hold (numbers lie outside blocks, and are rewritten from the line's end so that their columns hold)."""
    lines = path.read_text().split("\n")
    for v, now in sorted(numbers, key=lambda n: (n[0].line, n[0].start), reverse=True):
        lines[v.line] = lines[v.line][:v.start] + now + lines[v.line][v.end:]
    for block, output in reversed(results):
        blank_before_end = [""] if lines[block.end] == END_MARKER else []
        lines[block.first:block.end] = output.strip("\n").split("\n") + blank_before_end
    path.write_text("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["check", "update"])
    parser.add_argument("--tpsim", default=str(ROOT / "build/cli/tpsim"), help="the binary under test")
    parser.add_argument("files", nargs="*", help="default: README.md, docs/*.md and real/results/*/README.md")
    args = parser.parse_intermixed_args()
    files = [Path(f).resolve() for f in args.files] or (
        [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "real/results").glob("*/README.md")))
    tpsim = Path(args.tpsim).resolve()
    if not os.access(tpsim, os.X_OK):
        sys.exit(f"doc_outputs: no tpsim binary at {tpsim} (build it, or pass --tpsim)")
    env = dict(os.environ, TPSIM=str(tpsim), PATH=f"{tpsim.parent}{os.pathsep}{os.environ.get('PATH', '')}")

    blocks = [b for f in files for b in blocks_of(f)]
    values = [v for f in files for v in values_of(f, [b for b in blocks if b.path == f])]
    bare = [(f, i, n) for f in files for i, n in unannotated(f, [b for b in blocks if b.path == f])]
    # Each numbers' command runs once, as a block of its own whose output is not quoted anywhere.
    commands = sorted({v.command for v in values})
    sources = [Block(Path(ROOT / "<value>"), 0, 0, c) for c in commands]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        outputs = list(pool.map(lambda b: run(b, env), blocks + sources))
    failures = [error for _, error in outputs if error]
    ran = [(block, output) for block, (output, error) in zip(blocks, outputs) if not error]
    source_output = {b.command: output for b, (output, error) in zip(sources, outputs[len(blocks):]) if not error}
    numbers = []  # (value, the number as it should read)
    for v in values:
        if v.command not in source_output:
            continue
        try:
            numbers.append((v, formatted(evaluate(v, source_output[v.command]), v.number)))
        except ValueError as error:
            failures.append(f"{v.where()}: the number {v.number} ('{v.command} => {v.expr}'): {error}")
    failures += [f"{shown(f)}:{i + 1}: {n} reads like a tpsim result but has no annotation (<!-- value of: ... -->, "
                 "<!-- published -->, <!-- history --> or <!-- tested: FILE -->)" for f, i, n in bare]
    if args.mode == "check":
        lines = {f: f.read_text().split("\n") for f in files}
        failures += filter(None, (difference(block, lines[block.path], output) for block, output in ran))
        failures += [f"{v.where()}: {v.number} should read {now} ('{v.command} => {v.expr}')" for v, now in numbers
                     if now != v.number]
    else:
        for f in files:
            rewrite(f, [(block, output) for block, output in ran if block.path == f],
                    [(v, now) for v, now in numbers if v.path == f])
    for failure in failures:
        print(failure, file=sys.stderr)
    if failures and args.mode == "check":
        print("doc_outputs: regenerate with tools/update_docs.sh and review the git diff", file=sys.stderr)
    print(f"doc_outputs: {len(blocks)} blocks and {len(values)} numbers in {len(files)} files, {len(failures)} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
