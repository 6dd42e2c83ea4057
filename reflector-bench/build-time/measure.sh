#!/usr/bin/env bash
# Build time of a user's minimal controller: on reflector (`ours/`) and on kube-runtime
# (`kube-runtime/`), the same kube, k8s-openapi and tokio, in one run.
#
#   bash reflector-bench/build-time/measure.sh [ROUNDS] [REBUILDS]     (defaults 2 and 5)
#
# Each round builds each crate (in alternating order) from an empty target dir with
# `cargo build` (the dev profile a user gets: no CARGO_PROFILE_* or RUSTFLAGS from the
# environment), then REBUILDS times touches each one's `src/main.rs` and builds again. Both crates start from the
# workspace's Cargo.lock, so they build the same versions. Prints one line per build:
# wall, user and system seconds, and the load average; then the medians.
#
# With `--check-args` last it only validates the arguments and both crates' manifests,
# builds and measures nothing, and exits (what `scripts/check-benchmarks.py` runs).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
check_only=false
if [ "${!#:-}" = "--check-args" ]; then
    check_only=true
    set -- "${@:1:$(($# - 1))}"
fi
rounds="${1:-2}"
rebuilds="${2:-5}"
for n in "$rounds" "$rebuilds"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS and REBUILDS are positive integers, not '$n'" >&2; exit 2; }
done
(($# <= 2)) || { echo "usage: measure.sh [ROUNDS] [REBUILDS]" >&2; exit 2; }
if $check_only; then
    for crate in ours kube-runtime; do
        cargo metadata --offline --no-deps --format-version 1 \
            --manifest-path "$here/$crate/Cargo.toml" >/dev/null
    done
    exit 0
fi
scratch="$(mktemp -d "${TMPDIR:-/tmp}/build-time.XXXXXX")"
trap 'rm -rf "$scratch" "$here/ours/Cargo.lock" "$here/kube-runtime/Cargo.lock"' EXIT
unset RUSTFLAGS RUSTC_WRAPPER CARGO_BUILD_RUSTFLAGS CARGO_TARGET_DIR CARGO_INCREMENTAL
for var in $(env | sed -n 's/^\(CARGO_PROFILE_[A-Z_]*\)=.*/\1/p'); do unset "$var"; done

results="$scratch/results"
: > "$results"

# build CRATE KIND: one timed `cargo build`; appends "crate kind wall user sys".
build() {
    local crate="$1" kind="$2" out
    /usr/bin/time -o "$scratch/time" -f '%e %U %S' cargo build --offline --quiet \
        --manifest-path "$here/$crate/Cargo.toml" --target-dir "$scratch/target-$crate" \
        >/dev/null 2>"$scratch/cargo.log" || {
        cat "$scratch/cargo.log" >&2
        return 1
    }
    out="$(tail -1 "$scratch/time")"
    # The linked binary's size: the rebuild's link time follows it.
    size="$(stat -c %s "$scratch/target-$crate/debug/build-time-$crate")"
    echo "$crate $kind $out $size" >> "$results"
    # shellcheck disable=SC2086 # $out is three numbers
    printf '%-13s %-7s wall %6.1f s  user %6.1f s  sys %5.1f s  binary %5.1f MB  load %s\n' \
        "$crate" "$kind" $out "$(awk -v s="$size" 'BEGIN {print s / 1000000}')" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

for crate in ours kube-runtime; do
    cp "$here/../../Cargo.lock" "$here/$crate/Cargo.lock"
done
for ((round = 0; round < rounds; round++)); do
    order=(ours kube-runtime)
    ((round % 2 == 1)) && order=(kube-runtime ours)
    for crate in "${order[@]}"; do
        rm -rf "$scratch/target-$crate"
        build "$crate" cold
    done
    # A rebuild takes seconds: several, alternated, so that one scheduling hiccup
    # does not decide the median.
    for ((i = 0; i < rebuilds; i++)); do
        for crate in "${order[@]}"; do
            touch "$here/$crate/src/main.rs"
            build "$crate" rebuild
        done
    done
    for crate in "${order[@]}"; do rm -rf "$scratch/target-$crate"; done
done

median() { sort -n | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }
echo
echo "| build | crate | wall (s) | user+sys (s) | binary (MB) |"
echo "|---|---|---|---|---|"
for kind in cold rebuild; do
    for crate in ours kube-runtime; do
        wall=$(awk -v c="$crate" -v k="$kind" '$1==c && $2==k {print $3}' "$results" | median)
        cpu=$(awk -v c="$crate" -v k="$kind" '$1==c && $2==k {print $4+$5}' "$results" | median)
        size=$(awk -v c="$crate" -v k="$kind" '$1==c && $2==k {printf "%.1f\n", $6 / 1000000}' "$results" | median)
        echo "| $kind | $crate | $wall | $cpu | $size |"
    done
done
