#!/usr/bin/env bash
# The ways a program consumes shardwise, each a tiny project in this folder
# that builds consumer.cpp twice, with the default (the run-time part compiled once in the
# companion library libshardwise_runtime) and header-only, and runs both under mpiexec -n 2:
#
#   meson_subproject  dependency('shardwise') and dependency('shardwise-header-only') through
#                     subprojects/shardwise.wrap: README.md's wrap, pointed at a git clone of
#                     this source tree, which Meson clones
#   pkgconfig         meson install into a fresh prefix, then pkg-config shardwise and
#                     shardwise-header-only (and header-only with SHARDWISE_SEPARATE_COMPILATION
#                     and a runtime file of its own)
#   cmake             meson install into a fresh prefix, moved elsewhere (the package must be
#                     relocatable), then find_package(shardwise): shardwise::shardwise and
#                     shardwise::header_only
#   fetchcontent      README.md's FetchContent snippet as written, pointed at a git clone of
#                     this source tree (its files as git would check them out)
#   add_subdirectory  the same files in the project's third_party/shardwise, then
#                     add_subdirectory (CMakeLists.txt at the top of this tree)
#   scalapack_c       the drop-in p?gemm from an installed prefix, in a C ScaLAPACK program
#                     (tests/scalapack/pdgemm_program.c): mpicc with pkg-config
#                     shardwise-scalapack as docs/scalapack.md writes it, and a C-only CMake
#                     project (project(x C)) linking shardwise::scalapack; each must print
#                     "all 16 calls right" and the drop-in's report of the calls it took
#
# Each program prints how it was built ("run-time part: compiled once" or "header-only"),
# which is checked too.
#
# usage: tests/consumers/run.sh SOURCE_ROOT WORK_DIR COMPILER [PATH...]   (default: all five)
#
# WORK_DIR is emptied first and keeps the builds for inspection. The Meson tests
# consumer_<PATH> (suite consumers) call this script.
set -euo pipefail

if (($# < 3)); then
  sed -n '2,32p' "$0"
  exit 2
fi
source_root=$(realpath "$1")
work=$(realpath -m "$2")
compiler=$3
shift 3
paths=("$@")
((${#paths[@]})) || paths=(meson_subproject pkgconfig cmake fetchcontent add_subdirectory scalapack_c)
here=$(dirname "$(realpath "$0")")

export CXX=$compiler
# OpenMPI as root, 2 ranks on any machine, shared memory only, one BLAS thread per rank.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
  OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

step() { echo "---- $*"; }

# meson install: configure, build the companion library (as README.md's install does), copy.
install_shardwise() {
  local prefix=$1
  step "install shardwise into $prefix"
  meson setup "$work/shardwise-build" "$source_root" --prefix="$prefix" --buildtype=release \
    -Dtests=disabled -Dexamples=disabled -Dbenchmarks=disabled >"$work/shardwise-setup.log" ||
    { cat "$work/shardwise-setup.log"; return 1; }
  meson install -C "$work/shardwise-build" --quiet >"$work/shardwise-install.log" ||
    { cat "$work/shardwise-install.log"; return 1; }
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

# A git repository of the source tree's files, one commit on branch main, in $work/shardwise-clone:
# what a user's clone is to README.md's snippets (committed or not, the files under test).
make_clone() {
  pack_source_tree
  step "git repository of those files in $work/shardwise-clone (branch main)"
  mkdir -p "$work/clone-tmp"
  tar -xzf "$work/shardwise.tar.gz" -C "$work/clone-tmp"
  mv "$work/clone-tmp/shardwise" "$work/shardwise-clone"
  rmdir "$work/clone-tmp"
  git -C "$work/shardwise-clone" init --quiet --initial-branch=main
  git -C "$work/shardwise-clone" add --all
  git -C "$work/shardwise-clone" -c user.name=consumer-test -c user.email=consumer-test@localhost \
    commit --quiet --no-gpg-sign -m "shardwise source tree under test"
}

# The first ```$2 block after README.md's heading line $1, with the placeholder path
# /path/to/your/shardwise/clone replaced by $work/shardwise-clone; fails when there is none.
readme_snippet() {
  local block
  # The block may be indented (in a list item): its lines lose the fence's indentation.
  block=$(awk -v heading="$1" -v lang="$2" '
    $0 == heading { in_section = 1; next }
    in_section && !in_block && match($0, /^ *```/) && substr($0, RLENGTH + 1) == lang {
      indent = RLENGTH - 3; in_block = 1; next }
    in_block && /^ *```/ { exit }
    in_block { print substr($0, indent + 1) }' "$source_root/README.md")
  if ! grep -q "/path/to/your/shardwise/clone" <<<"$block"; then
    echo "README.md: no \`\`\`$2 block with /path/to/your/shardwise/clone after '$1'" >&2
    return 1
  fi
  local placeholder=/path/to/your/shardwise/clone
  printf '%s\n' "${block//"$placeholder"/$work/shardwise-clone}"
}

# Configures and builds $work/project with CMake into $work/build; extra arguments go to cmake.
cmake_build() {
  cmake -S "$work/project" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$compiler" "$@" >"$work/cmake.log" ||
    { cat "$work/cmake.log"; exit 1; }
  grep -E "^-- shardwise" "$work/cmake.log" || true   # the BLAS chosen, when built from source
  cmake --build "$work/build" >/dev/null
}

# Runs program $1 on 2 ranks; its output must say that its run-time part is $2.
run_consumer() {
  step "mpiexec -n 2 $1 (run-time part: $2)"
  mpiexec -n 2 --bind-to none "$1" | tee "$work/run.log"
  grep -qx "run-time part: $2" "$work/run.log" ||
    { echo "$1 was not built as expected: its run-time part should be '$2'"; exit 1; }
}

# Runs the ScaLAPACK program $1 on 2 ranks: its results must be right and the drop-in must
# have taken its calls (its report, on rank 0).
run_dropin() {
  step "mpiexec -n 2 $1 (SHARDWISE_PGEMM_REPORT=1)"
  SHARDWISE_PGEMM_REPORT=1 mpiexec -n 2 --bind-to none -x SHARDWISE_PGEMM_REPORT "$1" 2>&1 | tee "$work/run.log"
  grep -q "all 16 calls right" "$work/run.log" || { echo "$1: the program's results are not all right"; exit 1; }
  grep -q "^shardwise p?gemm (rank 0): 16 calls" "$work/run.log" ||
    { echo "$1: the drop-in did not take the calls (no report)"; exit 1; }
}

for path in "${paths[@]}"; do
  rm -rf "$work"
  mkdir -p "$work"
  echo "==== consumer: $path ($compiler)"
  case "$path" in
    meson_subproject)
      make_clone
      copy_project meson_subproject
      mkdir -p "$work/project/subprojects"
      readme_snippet "## Use it from your project" ini >"$work/project/subprojects/shardwise.wrap"
      step "meson setup (subprojects/shardwise.wrap from README.md: $(grep '^url' "$work/project/subprojects/shardwise.wrap"))"
      # Use the subproject even where a shardwise is installed on the system.
      meson setup "$work/build" "$work/project" --force-fallback-for=shardwise,shardwise-header-only \
        >"$work/setup.log" || { cat "$work/setup.log"; exit 1; }
      grep -E "Executing subproject|Dependency shardwise" "$work/setup.log"
      ninja -C "$work/build" >/dev/null
      run_consumer "$work/build/consumer" "compiled once"
      run_consumer "$work/build/consumer_header_only" "header-only"
      ;;
    pkgconfig)
      install_shardwise "$work/prefix"
      pc=$(find "$work/prefix" -name shardwise.pc)
      export PKG_CONFIG_PATH=${pc%/*}
      step "pkg-config --cflags --libs shardwise: $(pkg-config --cflags --libs shardwise)"
      step "pkg-config --cflags --libs shardwise-header-only: $(pkg-config --cflags --libs shardwise-header-only)"
      copy_project pkgconfig
      "$work/project/build.sh"
      run_consumer "$work/project/consumer" "compiled once"
      run_consumer "$work/project/consumer_header_only" "header-only"
      run_consumer "$work/project/consumer_separate" "compiled once"
      ;;
    cmake)
      install_shardwise "$work/staged"
      mv "$work/staged" "$work/prefix"
      copy_project cmake
      step "cmake -DCMAKE_PREFIX_PATH=$work/prefix (the install, moved there after meson install)"
      cmake_build -DCMAKE_PREFIX_PATH="$work/prefix"
      grep "^shardwise_DIR:" "$work/build/CMakeCache.txt"
      run_consumer "$work/build/consumer" "compiled once"
      run_consumer "$work/build/consumer_header_only" "header-only"
      ;;
    fetchcontent)
      make_clone
      copy_project fetchcontent
      readme_snippet "### Use from CMake" cmake >"$work/project/readme_snippet.cmake"
      step "cmake (README.md's snippet: $(grep -E 'GIT_REPOSITORY|GIT_TAG|SOURCE_DIR' "$work/project/readme_snippet.cmake" | tr -s ' ' | tr '\n' ' '))"
      cmake_build
      grep "^FETCHCONTENT_BASE_DIR:" "$work/build/CMakeCache.txt"
      run_consumer "$work/build/app" "compiled once"
      run_consumer "$work/build/app_header_only" "header-only"
      ;;
    add_subdirectory)
      pack_source_tree
      copy_project add_subdirectory
      mkdir -p "$work/project/third_party"
      tar -xzf "$work/shardwise.tar.gz" -C "$work/project/third_party"
      step "cmake (add_subdirectory(third_party/shardwise))"
      cmake_build
      run_consumer "$work/build/consumer" "compiled once"
      run_consumer "$work/build/consumer_header_only" "header-only"
      ;;
    scalapack_c)
      install_shardwise "$work/prefix"  # not a system prefix: nothing the loader searches
      pc=$(find "$work/prefix" -name shardwise-scalapack.pc)
      [ -n "$pc" ] || { echo "no shardwise-scalapack.pc in $work/prefix: was shardwise built with ScaLAPACK?"; exit 1; }
      export PKG_CONFIG_PATH=${pc%/*}
      copy_project scalapack_c
      step "mpicc with pkg-config --libs shardwise-scalapack: $(pkg-config --libs shardwise-scalapack)"
      "$work/project/build.sh"
      run_dropin "$work/project/with_shardwise"
      step "a C-only CMake project: find_package(shardwise), shardwise::scalapack"
      cmake -S "$work/project" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
      cmake --build "$work/build" >/dev/null
      run_dropin "$work/build/pdgemm_program"
      ;;
    *)
      echo "unknown consumer '$path' (use meson_subproject, pkgconfig, cmake, fetchcontent, add_subdirectory, scalapack_c)"
      exit 2
      ;;
  esac
done
