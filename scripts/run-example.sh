#!/usr/bin/env bash
# Quick start, first command: installs what is missing, builds, and runs the flagship
# example, the policy tour, on 8 MPI ranks (oversubscribed on a small machine).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
dir=build-example
if [ ! -d "$dir" ]; then
  meson setup "$dir" --buildtype=release -Dtests=disabled -Dbenchmarks=disabled
fi
ninja -C "$dir" examples/policy_tour
# Running as root (containers, CI) and more ranks than cores are both fine for an example.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
exec mpiexec -n 8 --bind-to none "$dir/examples/policy_tour" "$@"
