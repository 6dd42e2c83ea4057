#!/usr/bin/env bash
# Counts the public types and traits of reflector-core (structs, enums, traits, type
# aliases, unions) from rustdoc's item index, and lists them.
#
# Usage: scripts/public-items.sh
set -euo pipefail
cd "$(dirname "$0")/.."

cargo doc -p reflector-core --no-deps --locked --quiet

target_dir="${CARGO_TARGET_DIR:-target}"
all_html="$target_dir/doc/reflector_core/all.html"
[ -f "$all_html" ] || { echo "missing $all_html" >&2; exit 1; }

# all.html links every item as `<a href="module/kind.Name.html">module::Name</a>`.
items=$(grep -oE 'href="[^"]*(struct|enum|trait|type|union)\.[A-Za-z0-9_]+\.html"[^>]*>[^<]+' "$all_html" \
  | sed -E 's/.*>//' | sort -u)
count=$(printf '%s\n' "$items" | grep -c . || true)

echo "reflector-core public types and traits: $count"
printf '%s\n' "$items"
