#!/usr/bin/env python3
"""Lists functions longer than a limit, in lines from the signature's first line to the closing
brace. A function is a brace block opened at namespace scope (or inside a class body) after a
parenthesised parameter list; lambdas and blocks inside it count toward it.

  scripts/long-functions.py [--max N] [--fail] PATH...

With --fail, exits 1 when any is found (make test runs it over gpu_worker/cuda).
"""
import argparse
import pathlib
import re
import sys

SOURCE = {".cc", ".h", ".cu"}


def strip(text):
    """Comments, strings and character literals blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = ")" + m.group(1) + '"'
            j = text.find(end, i)
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
            out.append(c)  # a digit separator (10'000), not a character literal
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = strip(path.read_text(errors="replace"))
    found, stack = [], []  # stack: (kind, start offset)
    for m in re.finditer(r"[{}]", text):
        if m.group() == "{":
            before = text[: m.start()].rstrip()
            head = before[before.rfind(";") + 1:] if stack and stack[-1][0] == "fn" else before
            inside_fn = any(k == "fn" for k, _ in stack)
            is_fn = (not inside_fn and re.search(r"\)\s*(const|override|final|noexcept|->[^{;]*|\s)*$", before)
                     and not re.search(r"\b(namespace|struct|class|enum|union)\b[^;{}()]*$", before))
            if is_fn:
                # The signature starts after the previous ; { } at this scope.
                start = max(before.rfind(";"), before.rfind("{"), before.rfind("}")) + 1
                stack.append(("fn", start))
            else:
                stack.append(("block", m.start()))
        elif stack:
            kind, start = stack.pop()
            if kind == "fn":
                sig = text[start:m.start()]
                first = start + len(sig) - len(sig.lstrip())
                line0 = text.count("\n", 0, first) + 1
                line1 = text.count("\n", 0, m.start()) + 1
                name = re.search(r"([~\w:]+)\s*\(", text[first:m.start()])
                found.append((line1 - line0 + 1, line0, name.group(1) if name else "?"))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max", type=int, default=80)
    ap.add_argument("--fail", action="store_true")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    files = []
    for p in map(pathlib.Path, a.paths):
        files += sorted(f for f in p.rglob("*") if f.suffix in SOURCE) if p.is_dir() else [p]
    long = []
    for f in files:
        long += [(n, f"{f}:{line}", name) for n, line, name in functions(f) if n > a.max]
    for n, where, name in sorted(long, reverse=True):
        print(f"{n:5d} lines  {where}  {name}")
    if a.fail and long:
        print(f"long-functions: {len(long)} function(s) over {a.max} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
