#!/usr/bin/env bash
# Builds ScaLAPACK's PDGEMM (BLACS, the PBLAS it needs, a few TOOLS) against SimGrid's SMPI,
# and the PDGEMM driver simulation/drivers/simulate_pdgemm.cpp, so that the peer runs on the same
# simulated clusters as shardwise (simulation/simulate). Debian's libscalapack is linked to
# OpenMPI and cannot run under smpirun; the reference source can be compiled with smpicc.
#
#   simulation/peers/build_scalapack_smpi.sh [SCALAPACK_SOURCE] [BUILD_DIR]
#     SCALAPACK_SOURCE  reference ScaLAPACK's source tree (BLACS/SRC, PBLAS/SRC, TOOLS; e.g. a
#                       clone of https://github.com/Reference-ScaLAPACK/scalapack): the first
#                       argument, else the environment variable SCALAPACK_SOURCE, else
#                       ../shared/peers/scalapack next to this repository
#     BUILD_DIR         default build-scalapack-smpi/ in this repository (ignored by git);
#                       the source is only read, never copied into the repository
# Then:  simulation/simulate pdgemm P PLATFORM [--n N] [--nb NB] [--check]
#        simulation/simulate dropin P PLATFORM [--n N] [--nb NB] [--check]   (the drop-in, below)
#
# What is compiled (with smpicc / smpif90; gfortran must be installed):
#   - BLACS: the internal BI_*.c once; the user routines twice, for the Fortran interface and,
#     with -DCallFromC, for the C one (Cblacs_*), as ScaLAPACK's own build does;
#   - PBLAS: pdgemm_.c, pdtran_.c, pilaenv.f, PTOOLS/*.c, and the Fortran of PTZBLAS and PBBLAS;
#   - TOOLS: the descriptor and index helpers PDGEMM and the driver call;
#   - REDIST: PDGEMR2D (pdgemr.c, pdgemr2.c, pgemraux.c) from SCALAPACK_REDIST_SOURCE, else
#     REDIST/SRC of the source tree, where there is one (the peer subset has none: then the
#     ScaLAPACK driver's --routine gemr2d says so and stops).
# Everything goes into one static archive, so only what pdgemm_ reaches is linked.
# The local GEMMs: flop_charging_dgemm.c defines dgemm_, which charges 2mnk flops to the
# simulated host (and multiplies through OpenBLAS's cblas_dgemm only when the driver asks),
# exactly as shardwise's kernels do under SHARDWISE_SIMULATE.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
source_dir=${1:-${SCALAPACK_SOURCE:-$repo/../shared/peers/scalapack}}
build_dir=${2:-$repo/build-scalapack-smpi}
for tool in smpicc smpif90 smpicxx; do
  command -v "$tool" >/dev/null || { echo "build_scalapack_smpi: $tool not found (libsimgrid-dev)" >&2; exit 2; }
done
[ -d "$source_dir/PBLAS/SRC" ] || {
  echo "build_scalapack_smpi: no PBLAS/SRC under $source_dir; name ScaLAPACK's source tree as the first argument or in SCALAPACK_SOURCE" >&2
  exit 2
}
redist=${SCALAPACK_REDIST_SOURCE:-$source_dir/REDIST/SRC}
driver_flags=()
if [ ! -d "$redist" ]; then
  echo "build_scalapack_smpi: no REDIST/SRC ($redist): simulate_pdgemm is built without PDGEMR2D" >&2
  driver_flags=(-DSIMULATE_NO_PDGEMR2D=1)
fi
mkdir -p "$build_dir/obj"
obj=$build_dir/obj
jobs=$(nproc)

# -DAdd_: Fortran symbols with one trailing underscore (gfortran). -fPIC: smpirun loads the
# program as a shared object. SMPI_NO_OVERRIDE_MALLOC: BLACS's and PBLAS's buffers stay
# private, so that a checked run computes right (a folded run folds its own operands).
cflags=(-O2 -DAdd_ -fPIC -w -DSMPI_NO_OVERRIDE_MALLOC=1)
fflags=(-O2 -fPIC -w -fallow-argument-mismatch)

# compile COMPILER OUTPUT SOURCE FLAGS...: skips what is up to date.
compile() {
  local compiler=$1 out=$2 src=$3
  shift 3
  if [ ! -f "$out" ] || [ "$src" -nt "$out" ]; then "$compiler" "$@" -c "$src" -o "$out"; fi
}
export -f compile

{
  blacs=$source_dir/BLACS/SRC
  for src in "$blacs"/*.c; do
    name=$(basename "$src" .c)
    echo "smpicc $obj/blacs_$name.o $src ${cflags[*]} -I$blacs"
    if [[ $name != BI_* ]]; then echo "smpicc $obj/blacs_C_$name.o $src ${cflags[*]} -DCallFromC -I$blacs"; fi
  done
  pblas=$source_dir/PBLAS/SRC
  for name in pdgemm_ pdtran_; do echo "smpicc $obj/pblas_$name.o $pblas/$name.c ${cflags[*]} -I$pblas"; done
  if [ -d "$redist" ]; then
    for name in pdgemr pdgemr2 pgemraux; do echo "smpicc $obj/redist_$name.o $redist/$name.c ${cflags[*]} -I$redist"; done
  fi
  echo "smpif90 $obj/pblas_pilaenv.o $pblas/pilaenv.f ${fflags[*]}"
  for src in "$pblas"/PTOOLS/*.c; do echo "smpicc $obj/ptools_$(basename "$src" .c).o $src ${cflags[*]} -I$pblas"; done
  for src in "$pblas"/PTZBLAS/*.f "$pblas"/PBBLAS/*.f; do
    echo "smpif90 $obj/$(basename "$(dirname "$src")")_$(basename "$src" .f).o $src ${fflags[*]}"
  done
  for name in numroc descinit descset iceil ilcm indxg2p indxg2l infog2l chk1mat pchkxmat dlatcpy; do
    echo "smpif90 $obj/tools_$name.o $source_dir/TOOLS/$name.f ${fflags[*]}"
  done
} | xargs -P "$jobs" -L 1 bash -c 'compile "$@"' compile

rm -f "$build_dir/libscalapack_smpi.a"
ar rcs "$build_dir/libscalapack_smpi.a" "$obj"/*.o

# The flop-charging dgemm_ and the driver, linked with the archive and OpenBLAS (its other
# BLAS routines, and cblas_dgemm for checked runs).
smpicc -O2 -fPIC -Wall -Wextra -c "$repo/simulation/drivers/flop_charging_dgemm.c" -o "$build_dir/flop_charging_dgemm.o"
# What SMPI lacks and BLACS's integer combines call (PDGEMR2D reaches them). Linked as an object,
# not from the archive: SMPI's header declares the MPI functions weak, and a weak reference
# takes nothing out of an archive.
smpicc -O2 -fPIC -Wall -Wextra -c "$repo/simulation/peers/smpi_type_match_size.c" -o "$build_dir/smpi_type_match_size.o"
smpicxx -std=c++20 -O2 -Wall -Wextra -Wpedantic -fno-gnu-unique -DSMPI_NO_OVERRIDE_MALLOC=1 -I"$repo/include" \
  "${driver_flags[@]}" "$repo/simulation/drivers/simulate_pdgemm.cpp" "$build_dir/flop_charging_dgemm.o" \
  "$build_dir/smpi_type_match_size.o" "$build_dir/libscalapack_smpi.a" \
  $(pkg-config --libs openblas) -lgfortran -o "$build_dir/simulate_pdgemm"
echo "build_scalapack_smpi: $build_dir/simulate_pdgemm"

# The drop-in on the same clusters: src/scalapack_dropin.cpp (libshardwise_scalapack's one
# source) compiled for SMPI, its kernels charging their flops (SHARDWISE_SIMULATE), linked
# before the archive so that the driver's pdgemm_ is the drop-in's (ScaLAPACK's pdgemm_.o is
# then not linked: a call the drop-in would hand back finds no PDGEMM and aborts, which a
# simulated cell must not hide).
# The driver with SHARDWISE_SIMULATE too (it sets the drop-in's switches and reads its stats).
simulate_flags=(-std=c++20 -O2 -DNDEBUG -Wall -Wextra -Wpedantic -fno-gnu-unique -fPIC -DSHARDWISE_SIMULATE=1
  -DSMPI_NO_OVERRIDE_MALLOC=1 -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1 -DSHARDWISE_USE_BLAS=1 -I"$repo/include")
# Compiled every time: it depends on most of include/shardwise, which `compile` does not follow.
"$repo/simulation/simulate" compile-dropin "$build_dir/scalapack_dropin.o"
smpicxx "${simulate_flags[@]}" $(pkg-config --cflags eigen3 openblas) "$repo/simulation/drivers/simulate_pdgemm.cpp" \
  "$build_dir/scalapack_dropin.o" "$build_dir/flop_charging_dgemm.o" "$build_dir/smpi_type_match_size.o" \
  "$build_dir/libscalapack_smpi.a" \
  $(pkg-config --libs openblas) -lgfortran -ldl -o "$build_dir/simulate_dropin"
echo "build_scalapack_smpi: $build_dir/simulate_dropin"
