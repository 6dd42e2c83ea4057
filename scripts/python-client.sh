#!/usr/bin/env bash
# Drives the testkit binary with the official Kubernetes Python client (PyPI `kubernetes`,
# pinned, into a scratch virtualenv): scripts/python-client.py. Fails if any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$scratch"
}
trap cleanup EXIT

echo "-- the Kubernetes Python client, into $scratch"
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install --quiet --disable-pip-version-check 'kubernetes==37.0.2'

echo "-- the testkit binary"
# `cargo run` execs the binary, so $! is the server itself.
cargo run --quiet --locked -p reflector-testkit -- --demo --admin \
  --crd examples/testkit/widget-crd.yaml > "$scratch/url" &
server=$!
until [ -s "$scratch/url" ]; do
  kill -0 "$server" 2>/dev/null || { echo "the testkit binary exited before serving"; exit 1; }
  sleep 0.2
done
url=$(head -n 1 "$scratch/url")
[ -n "$url" ] || { echo "the testkit binary printed no URL"; exit 1; }
cat > "$scratch/kubeconfig" <<CONFIG
apiVersion: v1
kind: Config
clusters: [{name: testkit, cluster: {server: "$url"}}]
users: [{name: testkit, user: {}}]
contexts: [{name: testkit, context: {cluster: testkit, user: testkit, namespace: demo}}]
current-context: testkit
CONFIG

echo "-- the checks, against $url"
timeout 120 "$scratch/venv/bin/python" scripts/python-client.py "$scratch/kubeconfig"
