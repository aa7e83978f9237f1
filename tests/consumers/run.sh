#!/usr/bin/env bash
# The three ways a numerical code consumes shardwise, each a tiny project in this folder
# that builds consumer.cpp and runs it under mpiexec -n 2:
#
#   meson_subproject  dependency('shardwise') through subprojects/shardwise.wrap, with this
#                     source tree standing in for the wrap's download
#   pkgconfig         meson install into a fresh prefix, then pkg-config --cflags --libs shardwise
#   cmake             meson install into a fresh prefix, moved elsewhere (the package must be
#                     relocatable), then find_package(shardwise) and shardwise::shardwise
#
# usage: tests/consumers/run.sh SOURCE_ROOT WORK_DIR COMPILER [PATH...]   (default: all three)
#
# WORK_DIR is emptied first and keeps the builds for inspection. The Meson tests
# consumer_<PATH> (suite consumers) call this script.
set -euo pipefail

if (($# < 3)); then
  sed -n '2,14p' "$0"
  exit 2
fi
source_root=$(realpath "$1")
work=$(realpath -m "$2")
compiler=$3
shift 3
paths=("$@")
((${#paths[@]})) || paths=(meson_subproject pkgconfig cmake)
here=$(dirname "$(realpath "$0")")

export CXX=$compiler
# OpenMPI as root, 2 ranks on any machine, shared memory only, one BLAS thread per rank.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

step() { echo "---- $*"; }

# meson install of a header-only library: configure (nothing to build), then copy.
install_shardwise() {
  local prefix=$1
  step "install shardwise into $prefix"
  meson setup "$work/shardwise-build" "$source_root" --prefix="$prefix" \
    -Dtests=disabled -Dexamples=disabled -Dbenchmarks=disabled >"$work/shardwise-setup.log" ||
    { cat "$work/shardwise-setup.log"; return 1; }
  meson install -C "$work/shardwise-build" --no-rebuild --quiet
}

# A copy of the consumer project (symlinks resolved), so the source tree stays clean.
copy_project() {
  rm -rf "$work/project"
  cp -RL "$here/$1" "$work/project"
}

run_consumer() {
  step "mpiexec -n 2 $1"
  mpiexec -n 2 --bind-to none "$1"
}

for path in "${paths[@]}"; do
  rm -rf "$work"
  mkdir -p "$work"
  echo "==== consumer: $path ($compiler)"
  case "$path" in
    meson_subproject)
      copy_project meson_subproject
      ln -s "$source_root" "$work/project/subprojects/shardwise"
      step "meson setup (dependency('shardwise') from the subproject)"
      # Use the subproject even where a shardwise is installed on the system.
      meson setup "$work/build" "$work/project" --force-fallback-for=shardwise >"$work/setup.log" ||
        { cat "$work/setup.log"; exit 1; }
      grep -E "Executing subproject|Dependency shardwise" "$work/setup.log"
      ninja -C "$work/build" >/dev/null
      run_consumer "$work/build/consumer"
      ;;
    pkgconfig)
      install_shardwise "$work/prefix"
      pc=$(find "$work/prefix" -name shardwise.pc)
      export PKG_CONFIG_PATH=${pc%/*}
      step "pkg-config --cflags --libs shardwise: $(pkg-config --cflags --libs shardwise)"
      copy_project pkgconfig
      "$work/project/build.sh"
      run_consumer "$work/project/consumer"
      ;;
    cmake)
      install_shardwise "$work/staged"
      mv "$work/staged" "$work/prefix"
      copy_project cmake
      step "cmake -DCMAKE_PREFIX_PATH=$work/prefix (the install, moved there after meson install)"
      cmake -S "$work/project" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_COMPILER="$compiler" -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/cmake.log" ||
        { cat "$work/cmake.log"; exit 1; }
      grep "^shardwise_DIR:" "$work/build/CMakeCache.txt"
      cmake --build "$work/build" >/dev/null
      run_consumer "$work/build/consumer"
      ;;
    *)
      echo "unknown consumer '$path' (use meson_subproject, pkgconfig, cmake)"
      exit 2
      ;;
  esac
done
