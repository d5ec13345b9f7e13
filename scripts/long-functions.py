#!/usr/bin/env python3
"""Lists functions longer than a limit, in lines from the signature's first line to the closing
brace, and (with --max-file-lines) source files longer than a limit.

A function is read two ways and counted at the longer of the two: by this script's own brace
reading (a brace block opened at namespace scope or in a class body after a parenthesised parameter
list; lambdas and blocks inside it count toward it), and as Universal Ctags reads C++ and CUDA (its
`end` field), which also sees constructors whose member initializers hold braces. Without ctags
on the PATH the brace reading alone counts, and the script says so.

  scripts/long-functions.py [--max N] [--max-file-lines N] [--fail] PATH...

With --fail, exits 1 when any is found (make test runs it over core/, service/, server/, client/
and gpu_worker/).
"""
import argparse
import json
import pathlib
import re
import shutil
import subprocess
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


def functions(source):
    text = strip(source)
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


def ctags_functions(files):
    """{(path, first line): (lines, name)} as Universal Ctags reads the files' functions, or None
    without ctags."""
    exe = shutil.which("ctags")
    if not exe or not files:
        return None
    out = subprocess.run([exe, "--languages=C++,CUDA", "--map-C++=+.h", "--kinds-C++=f",
                          "--kinds-CUDA=f", "--fields=+ne", "--output-format=json", "-f", "-"]
                         + [str(f) for f in files], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    found = {}
    for line in out.stdout.splitlines():
        tag = json.loads(line)
        if tag.get("_type") == "tag" and "end" in tag:
            found[(tag["path"], tag["line"])] = (tag["end"] - tag["line"] + 1, tag["name"])
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max", type=int, default=80)
    ap.add_argument("--max-file-lines", type=int, default=0,
                    help="also list source files longer than this (0: files are not checked)")
    ap.add_argument("--fail", action="store_true")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    files = []
    for p in map(pathlib.Path, a.paths):
        files += sorted(f for f in p.rglob("*") if f.suffix in SOURCE) if p.is_dir() else [p]
    counted = {}  # (path, first line) -> (lines, name): the longer reading of each function
    file_lines = {}  # path -> its lines
    for f in files:
        source = f.read_text(errors="replace")
        file_lines[str(f)] = source.count("\n")
        for n, line, name in functions(source):
            counted[(str(f), line)] = (n, name)
    tagged = ctags_functions(files)
    if tagged is None:
        print("long-functions: no Universal Ctags on the PATH; brace reading only", file=sys.stderr)
    for (path, line), (n, name) in (tagged or {}).items():
        # The same function as the brace reading found, if that one starts at most a few lines
        # above (ctags starts at the name, the brace reading at the signature's first line).
        key = next(((path, l) for l in range(line, line - 4, -1) if (path, l) in counted), (path, line))
        if n > counted.get(key, (0, ""))[0]:
            counted[key] = (n, name)
    long = sorted(((n, f"{path}:{line}", name) for (path, line), (n, name) in counted.items()
                   if n > a.max), reverse=True)
    for n, where, name in long:
        print(f"{n:5d} lines  {where}  {name}")
    big = sorted(((n, f) for f, n in file_lines.items() if 0 < a.max_file_lines < n), reverse=True)
    for n, f in big:
        print(f"{n:5d} lines  {f}  (file)")
    if a.fail and (long or big):
        print(f"long-functions: {len(long)} function(s) over {a.max} lines, {len(big)} file(s) over "
              f"{a.max_file_lines} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
