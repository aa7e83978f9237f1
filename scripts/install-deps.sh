#!/usr/bin/env bash
# Installs what shardwise needs on Debian 12. Idempotent: installs only what is missing.
set -euo pipefail

packages=(
  gcc g++ clang-16 meson ninja-build pkg-config python3 cmake git
  libeigen3-dev libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev libscalapack-openmpi-dev   # BLAS backend; ScaLAPACK: the drop-in p?gemm, its tests and the pdgemm peer
  gnuplot-nox                                # benchmark plot
  doxygen                                    # API reference (ninja -C build docs, test docs)
  libsimgrid-dev                             # smpicxx, smpirun: simulated clusters (simulation/simulate)
  gfortran                                   # smpif90: ScaLAPACK's PDGEMM for the simulator (simulation/peers/build_scalapack_smpi.sh)
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
