#!/usr/bin/env bash
# Quick start, first command: installs what is missing, builds, and runs the flagship
# example, the policy tour.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
dir=build-example
if [ ! -d "$dir" ]; then
  meson setup "$dir" -Dtests=disabled -Dbenchmarks=disabled
fi
ninja -C "$dir" examples/policy_tour
"$dir/examples/policy_tour"
