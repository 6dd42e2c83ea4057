#!/usr/bin/env bash
# A newcomer's first build: the README's Cargo.toml block ("Use it in your crate") and its
# controller ("A controller", subscriber included) as a crate of their own, outside this
# workspace. The crates.io versions the block names for reflector and reflector-testkit are
# replaced by paths to this workspace (after checking they match its version); the rest is
# resolved offline from the workspace's Cargo.lock, as `.ci/run` does for
# reflector-bench/build-time/ours, and built in the workspace's target dir, so the
# dependencies the test build compiled with the same features are not compiled again.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
crate=$(mktemp -d)
trap 'rm -rf "$crate"' EXIT

python3 - "$root" "$crate" <<'PY'
import re
import sys
from pathlib import Path

root, crate = Path(sys.argv[1]), Path(sys.argv[2])
readme = (root / "README.md").read_text()


def first_block(section, fence):
    """The first code block opened by `fence` in the README's `## section`."""
    start = readme.find(f"\n## {section}\n")
    if start < 0:
        sys.exit(f"README.md has no section `## {section}`")
    end = readme.find("\n## ", start + 1)
    body = readme[start : end if end >= 0 else len(readme)]
    match = re.search(rf"^```{fence}[^\n]*\n(.*?)^```$", body, re.S | re.M)
    if not match:
        sys.exit(f"README.md's `## {section}` has no ```{fence} block")
    return match.group(1)


manifest = first_block("Use it in your crate", "toml")
controller = first_block("A controller", "rust")
if "tracing_subscriber::fmt()" not in controller:
    sys.exit("README.md's controller installs no tracing subscriber: its errors would go unseen")

version = re.search(
    r'^\[workspace\.package\].*?^version = "([^"]+)"', (root / "Cargo.toml").read_text(), re.S | re.M
).group(1)
for name, path in (("reflector", root), ("reflector-testkit", root / "reflector-testkit")):
    pattern = rf'^{re.escape(name)} = "([^"]+)"(.*)$'
    match = re.search(pattern, manifest, re.M)
    if not match:
        sys.exit(f'README.md\'s Cargo.toml block names no `{name} = "VERSION"`')
    wanted = match.group(1)
    if not version.startswith(wanted + ".") and version != wanted:
        sys.exit(f"README.md asks for {name} {wanted}; the workspace is at {version}")
    manifest = re.sub(pattern, f'{name} = {{ path = "{path}" }}\\2', manifest, count=1, flags=re.M)

(crate / "src").mkdir()
(crate / "src" / "main.rs").write_text(controller)
(crate / "Cargo.toml").write_text(
    '[package]\nname = "readme-controller"\nversion = "0.0.0"\nedition = "2024"\n'
    "publish = false\n\n[workspace]\n\n" + manifest
)
print((crate / "Cargo.toml").read_text())
PY

cp Cargo.lock "$crate/Cargo.lock"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" \
  cargo build --offline --manifest-path "$crate/Cargo.toml"
echo "the README's Cargo.toml block builds the README's controller"
