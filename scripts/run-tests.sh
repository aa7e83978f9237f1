#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is missing, then builds and tests
# with g++ and clang++-16 (warnings are errors), and once more under
# AddressSanitizer + UndefinedBehaviorSanitizer. The gcc configuration also builds the
# simulated-cluster driver (SimGrid SMPI) and runs it on 16 simulated ranks.
#
#   SHARDWISE_CONFIGS="gcc"  ./scripts/run-tests.sh    # a subset: gcc clang sanitize
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh

configs=${SHARDWISE_CONFIGS:-"gcc clang sanitize"}
for config in $configs; do
  case "$config" in
    gcc)      compiler=g++;         options=(--werror -Dsimulation=enabled) ;;  # + P = 16 on a simulated cluster
    clang)    compiler=clang++-16;  options=(--werror) ;;
    sanitize) compiler=g++;         options=(-Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled) ;;
    *) echo "unknown configuration '$config' (use gcc, clang, sanitize)"; exit 2 ;;
  esac
  dir="build-ci-$config"
  echo "==== $config: $compiler ${options[*]}"
  if [ -d "$dir" ]; then
    CXX=$compiler meson setup --reconfigure "$dir" "${options[@]}"
  else
    CXX=$compiler meson setup "$dir" "${options[@]}"
  fi
  ninja -C "$dir"
  meson test -C "$dir" --print-errorlogs
done
echo "==== all configurations passed: $configs"
