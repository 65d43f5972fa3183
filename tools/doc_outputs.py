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

  doc_outputs.py check  [--tpsim PATH] [FILE...]   fails, with a diff, on any block that differs
  doc_outputs.py update [--tpsim PATH] [FILE...]   rewrites every block from its command
"""
import argparse
import concurrent.futures
import difflib
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


def rewrite(path, results):
    """Writes each block's output into the file, from the last block up so that line numbers hold."""
    lines = path.read_text().split("\n")
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
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        outputs = list(pool.map(lambda b: run(b, env), blocks))
    failures = [error for _, error in outputs if error]
    ran = [(block, output) for block, (output, error) in zip(blocks, outputs) if not error]
    if args.mode == "check":
        lines = {f: f.read_text().split("\n") for f in files}
        failures += filter(None, (difference(block, lines[block.path], output) for block, output in ran))
    else:
        for f in files:
            rewrite(f, [(block, output) for block, output in ran if block.path == f])
    for failure in failures:
        print(failure, file=sys.stderr)
    if failures and args.mode == "check":
        print("doc_outputs: regenerate with tools/update_docs.sh and review the git diff", file=sys.stderr)
    print(f"doc_outputs: {len(blocks)} blocks in {len(files)} files, {len(failures)} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
