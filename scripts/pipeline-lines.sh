#!/usr/bin/env bash
# Counts the non-test lines of the pipeline below the informer: the Rust files git
# tracks under reflector-core/src/{fifo,informer,store}/, non-blank lines, leaving out
# `tests/` folders, `tests.rs` files and every item gated by `#[cfg(test)]` (a
# module, an impl, a function: the attribute and the item to its end).
#
# Usage: scripts/pipeline-lines.sh [REV]   (default: the work tree; a REV such as
#        `main` counts the files of that commit)
set -euo pipefail
cd "$(dirname "$0")/.."

rev="${1:-}"
dirs=(reflector-core/src/fifo reflector-core/src/informer reflector-core/src/store)

if [ -n "$rev" ]; then
  files=$(git ls-tree -r --name-only "$rev" -- "${dirs[@]}")
  show() { git show "$rev:$1"; }
else
  files=$(git ls-files -- "${dirs[@]}")
  show() { cat "$1"; }
fi

total=0
for f in $files; do
  case "$f" in
    *.rs) ;;
    *) continue ;;
  esac
  case "/$f" in
    */tests/* | */tests.rs) continue ;;
  esac
  n=$(show "$f" | python3 -c '
import sys
lines = sys.stdin.read().split("\n")
count, i = 0, 0
while i < len(lines):
    line = lines[i].strip()
    if line == "#[cfg(test)]":
        # Skip the gated item: to its closing brace, or to a `;` outside braces.
        depth, opened = 0, False
        i += 1
        while i < len(lines):
            code = lines[i].split("//")[0]
            depth += code.count("{") - code.count("}")
            opened |= "{" in code
            i += 1
            if (opened and depth <= 0) or (not opened and code.rstrip().endswith(";")):
                break
        continue
    if line:
        count += 1
    i += 1
print(count)
')
  total=$((total + n))
done
echo "$total"
