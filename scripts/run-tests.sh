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
  # Debug information is left out where no debugger reads it: with -g, g++ spends a quarter of
  # its time on this header-only library's templates writing it. clang checks its warnings at
  # -O0 (they do not depend on optimization there, unlike g++'s). The sanitizers run at -O0 with
  # -g, for stack traces; -O2 made ASan + UBSan builds five times slower.
  case "$config" in
    gcc)      compiler=g++;         options=(--werror -Ddebug=false -Dsimulation=enabled) ;;  # + P = 16 on a simulated cluster
    clang)    compiler=clang++-16;  options=(--werror -Ddebug=false -Doptimization=0) ;;
    sanitize) compiler=g++;         options=(-Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled) ;;
    *) echo "unknown configuration '$config' (use gcc, clang, sanitize)"; exit 2 ;;
  esac
  dir="build-ci-$config"
  echo "==== $config: $compiler ${options[*]}"
  if [ -d "$dir" ]; then
    CXX=$compiler meson setup --reconfigure "$dir" "${options[@]}"
  else
    CXX=$compiler meson setup "$dir" "${options[@]}"
  fi
  if [ "$config" = sanitize ]; then
    # What runs: the unit, MPI and example tests. meson test builds just what they need; the
    # compile-failure, documentation, install and consumer tests check the build, not the
    # running code, and the other two configurations run them.
    # At -O0 with ASan and UBSan, Eigen's serial reference products run several times slower than
    # in the optimized builds: the tests' timeouts are stretched, never their checks.
    meson test -C "$dir" --print-errorlogs --timeout-multiplier 3 --suite unit --suite mpi --suite examples \
      --no-suite compile_fail
  else
    ninja -C "$dir"
    meson test -C "$dir" --print-errorlogs
  fi
done
echo "==== all configurations passed: $configs"
