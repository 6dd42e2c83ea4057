#!/usr/bin/env python3
"""Finds import cycles between the top-level modules of reflector-core.

Walks the module tree from `reflector-core/src/lib.rs` (following `mod x;`
declarations, leaving out `#[cfg(test)]` items), and records an edge A -> B
whenever code in top-level module A names top-level module B: `use crate::b...`,
`crate::b::...` in an expression or type, `use crate::{b, c::d}`, `super::`
paths that climb to the crate root, and items the crate root re-exports
(`crate::Reflector` names `reflector`). Comments, doc comments and string
literals are not code and are ignored.

Prints the module graph, then every cycle: each strongly connected component
of more than one module, with the lines that make its edges. Exits 1 if there
is any cycle, 0 otherwise.

Usage: scripts/module-cycles.py [SRC_DIR]   (default: reflector-core/src)
"""

import os
import re
import sys
from collections import defaultdict

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments_and_strings(text):
    """Blanks comments and string/char literals, keeping newlines (line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = text.find("\n", i)
            j = n if j == -1 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 260]) and (i == 0 or not re.match(r"[A-Za-z0-9_]", text[i - 1])):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end == -1 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(\\.[^']*|[^'\\])'", text[i:i + 12])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(text, open_at):
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


CFG_TEST = re.compile(r"#\[cfg\(\s*test\s*\)\]")


def strip_test_items(code):
    """Blanks every item annotated `#[cfg(test)]` (to its `;` or matching `}`)."""
    while True:
        m = CFG_TEST.search(code)
        if not m:
            return code
        start, j = m.start(), m.end()
        # The item ends at the first `;` before any `{`, or at the `{`'s match.
        semi, brace = code.find(";", j), code.find("{", j)
        if brace == -1 or (semi != -1 and semi < brace):
            end = semi
        else:
            end = matching_brace(code, brace)
        code = code[:start] + re.sub(r"[^\n]", " ", code[start:end + 1]) + code[end + 1:]


def child_module_files(path, code):
    """The files of the `mod x;` declarations in `code` (a file at `path`)."""
    base = os.path.dirname(path)
    name = os.path.basename(path)
    if name not in ("lib.rs", "mod.rs", "main.rs"):
        base = os.path.join(base, name[:-3])
    files = []
    for m in re.finditer(r"(?:#\[path\s*=\s*\"([^\"]+)\"\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", code):
        sub = m.group(2)
        for candidate in (os.path.join(base, sub + ".rs"), os.path.join(base, sub, "mod.rs")):
            if os.path.exists(candidate):
                files.append((sub, candidate))
                break
    return files


def root_reexports(lib_code):
    """Names the crate root re-exports, mapped to the top-level module they come from."""
    names = {}
    for m in re.finditer(r"pub(?:\([^)]*\))?\s+use\s+(" + IDENT + r")::(\{[^}]*\}|" + IDENT + r")\s*;", lib_code):
        module, rest = m.group(1), m.group(2)
        for item in re.findall(IDENT + r"(?:\s+as\s+" + IDENT + r")?", rest.strip("{}")):
            parts = item.split()
            names[parts[-1]] = module
    return names


def use_group_heads(code, brace_at):
    """First path segment of each element of the `{...}` starting at `brace_at`."""
    end = matching_brace(code, brace_at)
    inner = code[brace_at + 1:end]
    heads, depth, current = [], 0, ""
    for ch in inner + ",":
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            m = re.match(r"\s*(" + IDENT + r")", current)
            if m:
                heads.append(m.group(1))
            current = ""
        else:
            current += ch
    return heads


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, "reflector-core", "src")
    lib = os.path.join(src, "lib.rs")
    with open(lib, encoding="utf-8") as f:
        lib_code = strip_test_items(strip_comments_and_strings(f.read()))
    top_files = child_module_files(lib, lib_code)
    tops = {name for name, _ in top_files}
    reexports = {k: v for k, v in root_reexports(lib_code).items() if v in tops}

    # edges[a][b] = ["path:line", ...]
    edges = defaultdict(lambda: defaultdict(list))
    for top, top_path in top_files:
        stack = [(top_path, [top])]
        while stack:
            path, modpath = stack.pop()
            with open(path, encoding="utf-8") as f:
                code = strip_test_items(strip_comments_and_strings(f.read()))
            for sub, sub_path in child_module_files(path, code):
                stack.append((sub_path, modpath + [sub]))
            rel = os.path.relpath(path, repo)

            def add(target, offset):
                if target in tops and target != top:
                    line = code.count("\n", 0, offset) + 1
                    edges[top][target].append(f"{rel}:{line}")

            for m in re.finditer(r"(?<![A-Za-z0-9_:])\$?crate::(\{|" + IDENT + ")", code):
                head = m.group(1)
                if head == "{":
                    for h in use_group_heads(code, m.end() - 1):
                        add(reexports.get(h, h), m.start())
                else:
                    add(reexports.get(head, head), m.start())
            # `super::` chains that climb past this module's top reach the crate root.
            for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:super::)+)(\{|" + IDENT + ")", code):
                ups = m.group(1).count("super::")
                if ups >= len(modpath):
                    head = m.group(2)
                    heads = use_group_heads(code, m.end() - 1) if head == "{" else [head]
                    for h in heads:
                        add(reexports.get(h, h), m.start())

    print(f"module graph of {os.path.relpath(src, repo)} ({len(tops)} top-level modules):")
    for a in sorted(tops):
        targets = sorted(edges[a])
        print(f"  {a} -> {', '.join(targets) if targets else '(nothing)'}")

    # Tarjan's strongly connected components.
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(sorted(comp))

    for v in sorted(tops):
        if v not in index:
            visit(v)

    cycles = [c for c in sccs if len(c) > 1]
    if not cycles:
        print("no import cycle between top-level modules")
        return 0
    print(f"{len(cycles)} import cycle(s) between top-level modules:")
    for comp in sorted(cycles):
        print(f"  cycle among: {', '.join(comp)}")
        members = set(comp)
        for a in comp:
            for b in sorted(edges[a]):
                if b in members:
                    where = edges[a][b]
                    more = f" (+{len(where) - 3} more)" if len(where) > 3 else ""
                    print(f"    {a} -> {b}: {', '.join(where[:3])}{more}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
