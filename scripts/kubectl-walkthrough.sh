#!/usr/bin/env bash
# Runs the testkit README's kubectl walk-throughs ("With kubectl (or any client)" and
# "Webhooks, with kubectl" in reflector-testkit/README.md) verbatim from the repository's
# root, each in its own shell, with Debian's kubectl (package kubernetes-client, unpacked
# into a scratch directory; a kubectl already on the machine is neither used nor touched).
# Fails if any command of a walk-through fails.
set -euo pipefail
cd "$(dirname "$0")/.."

sections=('## With kubectl (or any client)' '## Webhooks, with kubectl')
page=reflector-testkit/README.md
scratch=$(mktemp -d)
created=()
for file in testkit.url testkit.kubeconfig webhooks.url webhooks.kubeconfig denied.txt; do
  [ -e "$file" ] || created+=("$file")
done
cleanup() {
  rm -rf "$scratch"
  for file in "${created[@]}"; do rm -f "$file"; done
}
trap cleanup EXIT

echo "-- kubectl from Debian's kubernetes-client, into $scratch"
(
  cd "$scratch"
  # _apt cannot write into a root-owned scratch directory; download there as root.
  chmod 0777 .
  apt-get download kubernetes-client >/dev/null 2>&1 || {
    apt-get update >/dev/null
    apt-get download kubernetes-client >/dev/null
  }
  dpkg -x kubernetes-client_*.deb root
)
export PATH="$scratch/root/usr/bin:$PATH"
kubectl version --client

for section in "${sections[@]}"; do
  echo "-- the commands of \"$section\", from $page"
  awk -v section="$section" '
    $0 == section { in_section = 1; next }
    in_section && /^#+ / { exit }
    in_section && /^```sh$/ { in_block = 1; next }
    in_block && /^```$/ { exit }
    in_block { print }
  ' "$page" > "$scratch/walkthrough.sh"
  [ -s "$scratch/walkthrough.sh" ] || { echo "no sh block in $page's section: $section"; exit 1; }
  cat "$scratch/walkthrough.sh"

  echo "-- running them"
  # -x echoes each command; the processes a block starts in the background are stopped at
  # its end.
  timeout 900 bash -euxo pipefail -c "trap 'kill \$(jobs -p) 2>/dev/null; wait' EXIT
$(cat "$scratch/walkthrough.sh")"
done
echo "-- the kubectl walk-throughs passed"
