#!/usr/bin/env python3
"""Lists every C++ function over MAX_LINES lines (signature to closing brace) in the source folders, longest first.
Approximate: it blanks comments, string and character literals, then matches braces; a brace at namespace or class
scope that is not a namespace, class, enum or initializer opens a function, and lambdas count with their enclosing
function. Prints file:line: name (N lines) per function; exits 1 when one is over the limit, 0 otherwise.
Usage: tools/long_functions.py [--root DIR] [--max LINES] [--all]   (--all lists every function, ignoring the limit)"""
import pathlib
import re
import sys

MAX_LINES = 100
FOLDERS = ["base", "input", "model", "sim", "calibrate", "cli", "plan", "shard", "real"]
SUFFIXES = {".cpp", ".hpp", ".cu", ".h", ".cuh"}

RAW_STRING = re.compile(r'R"([^()\\ ]{0,16})\(')
SCOPE_KEYWORD = re.compile(r"\b(namespace|class|struct|union|enum)\b")
TRAILING = re.compile(r"\)\s*(const|noexcept(\s*\([^()]*\))?|override|final|mutable|volatile|&|&&|\s|->[^;{}=]*)*$")
MEMBER_INITIALIZER = re.compile(r"\)\s*(noexcept\s*)?:\s[^;]*[\w>]$")
NAME = re.compile(r"((?:[A-Za-z_~][A-Za-z_0-9]*\s*::\s*)*(?:operator\s*[^\s(]+|~?[A-Za-z_][A-Za-z_0-9]*))\s*(?:<[^()<>]*>)?\s*\($")


def blank_comments_and_literals(text):
    """The text with comments and literals replaced by spaces, newlines kept, so offsets and line numbers hold."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == "R" and RAW_STRING.match(text, i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            delimiter = RAW_STRING.match(text, i).group(1)
            end = text.find(")" + delimiter + '"', i)
            end = n if end < 0 else end + len(delimiter) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            out.append(c + " " * (end - i - 2) + (c if end - i >= 2 else ""))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def header_before(code, position):
    """The declaration text before the brace at position: back to the previous ';', '{' or '}' or preprocessor line."""
    i = position - 1
    while i >= 0 and code[i] not in ";{}":
        if code[i] == "#" and (i == 0 or code[i - 1] == "\n"):
            i = code.find("\n", i)
            break
        i -= 1
    return code[i + 1 : position]


def classify(header, pending):
    """'scope' (namespace, class, extern "C"), 'function', 'member' (a constructor's member initializer x_{a}) or
    'other' (enum, initializer) for a brace at outer scope; pending: a constructor's header came before."""
    text = " ".join(header.split())
    if MEMBER_INITIALIZER.search(text) or pending and text.startswith(",") and re.search(r"[\w>]$", text):
        return "member"
    if pending and not text:
        return "body"
    if not text or text.startswith("extern"):
        return "scope"
    paren = text.find("(")
    before_paren = text if paren < 0 else text[:paren]
    keyword = SCOPE_KEYWORD.search(before_paren)
    if keyword and keyword.group(1) != "enum" and "=" not in before_paren:
        return "scope"
    if keyword or "=" in before_paren or text.endswith("="):
        return "other"
    if TRAILING.search(text) or ":" in text and ")" in text:
        return "function"
    return "other"


def function_name(header):
    """The function's name in its declaration header (the qualified name before its parameter list)."""
    text = " ".join(header.split())
    depth = 0
    for i, c in enumerate(text):
        if c == "(":
            if depth == 0:
                m = NAME.search(text[: i + 1])
                if m:
                    return re.sub(r"\s+", "", m.group(1))
            depth += 1
        elif c == ")":
            depth -= 1
    return text[:40]


def functions(path):
    """(first line, last line, name) of every function defined in the file."""
    code = blank_comments_and_literals(path.read_text(errors="replace"))
    line_starts = [0] + [m.end() for m in re.finditer("\n", code)]

    def line_of(offset):
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    found = []
    stack = []  # one entry per open brace: its kind and, for a function, where its header starts and its name
    pending = None  # (first line, name) of a constructor whose member initializers are being read
    for m in re.finditer(r"[{}]", code):
        position = m.start()
        if code[position] == "{":
            if any(kind in ("function", "other", "member") for kind, _, _ in stack):
                stack.append(("inner", 0, ""))
                continue
            header = header_before(code, position)
            kind = classify(header, pending)
            start = line_of(position - len(header) + (len(header) - len(header.lstrip())))
            if kind == "member":
                pending = pending or (start, function_name(header))
                stack.append(("member", 0, ""))
            elif kind == "body":
                stack.append(("function", *pending))
                pending = None
            elif kind == "function":
                stack.append(("function", start, function_name(header)))
                pending = None
            else:
                stack.append((kind, 0, ""))
                pending = None
        elif stack:
            kind, first, name = stack.pop()
            if kind == "function":
                found.append((first, line_of(position), name))
    return found


def main(argv):
    root = pathlib.Path(__file__).resolve().parent.parent
    limit = MAX_LINES
    list_all = False
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--root" and args:
            root = pathlib.Path(args.pop(0))
        elif arg == "--max" and args:
            limit = int(args.pop(0))
        elif arg == "--all":
            list_all = True
        else:
            print(__doc__.splitlines()[-1], file=sys.stderr)
            return 2
    rows = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            for first, last, name in functions(path):
                length = last - first + 1
                if list_all or length > limit:
                    rows.append((length, f"{path.relative_to(root)}:{first}: {name} ({length} lines)"))
    for _, text in sorted(rows, key=lambda row: (-row[0], row[1])):
        print(text)
    return 1 if any(length > limit for length, _ in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
