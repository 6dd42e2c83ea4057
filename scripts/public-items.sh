#!/usr/bin/env bash
# Counts the public types and traits of reflector-core (structs, enums, traits, type
# aliases, unions) from rustdoc's item index, and lists them; fails if a retired
# Go-style name is public again, or if the count passes the budget below.
#
# Usage: scripts/public-items.sh
set -euo pipefail
cd "$(dirname "$0")/.."

cargo doc -p reflector-core --no-deps --all-features --locked --quiet

target_dir="${CARGO_TARGET_DIR:-target}"
all_html="$target_dir/doc/reflector_core/all.html"
[ -f "$all_html" ] || { echo "missing $all_html" >&2; exit 1; }

# all.html links every item as `<a href="module/kind.Name.html">module::Name</a>`.
items=$(grep -oE 'href="[^"]*(struct|enum|trait|type|union)\.[A-Za-z0-9_]+\.html"[^>]*>[^<]+' "$all_html" \
  | sed -E 's/.*>//' | sort -u)
count=$(printf '%s\n' "$items" | grep -c . || true)

echo "reflector-core public types and traits: $count"
printf '%s\n' "$items"

# The budget: a new public type replaces one, or the budget is raised on purpose with
# the reason in the commit that raises it.
budget=92
if [ "$count" -gt "$budget" ]; then
  echo "$count public types and traits, over the budget of $budget" >&2
  exit 1
fi

# Go-style names replaced by Rust ones (each kept as a `#[doc(alias)]`): none may be
# public again, as a function, method, trait method or type.
retired='get_by_key list_index_func_values shut_down shutting_down shut_down_with_drain
num_requeues item_exponential_failure_rate_limiter item_fast_slow_rate_limiter
bucket_rate_limiter max_of_rate_limiter with_max_wait_rate_limiter
default_controller_rate_limiter emit_delta_type_replaced known_objects
last_sync_resource_version FinalizerEvent DeltaFifo InOrderFifo InformerBuilder InformerQueue'
found=0
for name in $retired; do
  hits=$(grep -rlE "id=\"(method|tymethod)\.$name\"|/(fn|struct|enum|trait|type)\.$name\.html" \
    "$target_dir/doc/reflector_core" 2>/dev/null | head -3 || true)
  if [ -n "$hits" ]; then
    echo "retired name still public: $name (in $(echo $hits | tr '\n' ' '))" >&2
    found=1
  fi
done
# `informer::Event` would collide with `events::Event` in the prelude.
if [ -f "$target_dir/doc/reflector_core/informer/enum.Event.html" ]; then
  echo "retired name still public: informer::Event (now informer::Change)" >&2
  found=1
fi
[ "$found" = 0 ] || exit 1
echo "no retired Go-style name is public"
