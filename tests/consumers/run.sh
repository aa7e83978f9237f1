#!/usr/bin/env bash
# The five ways a numerical code consumes shardwise, each a tiny project in this folder
# that builds consumer.cpp and runs it under mpiexec -n 2:
#
#   meson_subproject  dependency('shardwise') through subprojects/shardwise.wrap, with this
#                     source tree standing in for the wrap's download
#   pkgconfig         meson install into a fresh prefix, then pkg-config --cflags --libs shardwise
#                     (header-only, and again with SHARDWISE_SEPARATE_COMPILATION)
#   cmake             meson install into a fresh prefix, moved elsewhere (the package must be
#                     relocatable), then find_package(shardwise) and shardwise::shardwise
#   fetchcontent      FetchContent_Declare(shardwise URL file://...) of a tarball of this
#                     source tree (as git would check it out), then FetchContent_MakeAvailable
#   add_subdirectory  the same files unpacked in the project's third_party/shardwise, then
#                     add_subdirectory (CMakeLists.txt at the top of this tree)
#
# usage: tests/consumers/run.sh SOURCE_ROOT WORK_DIR COMPILER [PATH...]   (default: all five)
#
# WORK_DIR is emptied first and keeps the builds for inspection. The Meson tests
# consumer_<PATH> (suite consumers) call this script.
set -euo pipefail

if (($# < 3)); then
  sed -n '2,19p' "$0"
  exit 2
fi
source_root=$(realpath "$1")
work=$(realpath -m "$2")
compiler=$3
shift 3
paths=("$@")
((${#paths[@]})) || paths=(meson_subproject pkgconfig cmake fetchcontent add_subdirectory)
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

# The files of the source tree, NUL-separated, relative to it: in a git work tree those
# git tracks or would track (a file missing from a commit is missing here too, build
# directories stay out), elsewhere everything but .git, build* and subprojects' downloads.
source_files() {
  if git -C "$source_root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$source_root" ls-files -z --cached --others --exclude-standard
  else
    (cd "$source_root" && find . \( -name .git -o -path './build*' -o -path './subprojects/*' -type d \) -prune \
      -o \( -type f -o -type l \) -printf '%P\0')
  fi
}

# The source tree as a release would have it, in $work/shardwise.tar.gz (top folder shardwise/).
pack_source_tree() {
  step "pack the source tree into $work/shardwise.tar.gz"
  source_files | (
    cd "$source_root"
    # git lists a deleted file until the deletion is staged, and an unmerged one once per side
    while IFS= read -r -d '' file; do
      if [ -e "$file" ] || [ -L "$file" ]; then printf '%s\0' "$file"; fi
    done
  ) | sort -zu | tar -czf "$work/shardwise.tar.gz" -C "$source_root" --null -T - --transform 's,^,shardwise/,S'
}

# Configures and builds $work/project with CMake into $work/build; extra arguments go to cmake.
cmake_build() {
  cmake -S "$work/project" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$compiler" "$@" >"$work/cmake.log" ||
    { cat "$work/cmake.log"; exit 1; }
  grep -E "^-- shardwise" "$work/cmake.log" || true   # the BLAS chosen, when built from source
  cmake --build "$work/build" >/dev/null
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
      run_consumer "$work/project/consumer_separate"
      ;;
    cmake)
      install_shardwise "$work/staged"
      mv "$work/staged" "$work/prefix"
      copy_project cmake
      step "cmake -DCMAKE_PREFIX_PATH=$work/prefix (the install, moved there after meson install)"
      cmake_build -DCMAKE_PREFIX_PATH="$work/prefix"
      grep "^shardwise_DIR:" "$work/build/CMakeCache.txt"
      run_consumer "$work/build/consumer"
      ;;
    fetchcontent)
      pack_source_tree
      copy_project fetchcontent
      step "cmake (FetchContent_Declare(shardwise URL file://$work/shardwise.tar.gz))"
      # Not FETCHCONTENT_FULLY_DISCONNECTED: it would skip the unpacking too; a file:// URL
      # needs no network.
      cmake_build -DSHARDWISE_TARBALL="$work/shardwise.tar.gz"
      grep "^FETCHCONTENT_BASE_DIR:" "$work/build/CMakeCache.txt"
      run_consumer "$work/build/consumer"
      ;;
    add_subdirectory)
      pack_source_tree
      copy_project add_subdirectory
      mkdir -p "$work/project/third_party"
      tar -xzf "$work/shardwise.tar.gz" -C "$work/project/third_party"
      step "cmake (add_subdirectory(third_party/shardwise))"
      cmake_build
      run_consumer "$work/build/consumer"
      ;;
    *)
      echo "unknown consumer '$path' (use meson_subproject, pkgconfig, cmake, fetchcontent, add_subdirectory)"
      exit 2
      ;;
  esac
done
