// shardwise/scalapack/block_cyclic.hpp: one dimension of ScaLAPACK's 2-D block-cyclic
// distribution, as index maps.
//
// A dimension of n indices is cut into blocks of nb; block b lives on process
// (src + b) mod procs, and each process stores its blocks one after another. These are the
// maps of ScaLAPACK's TOOLS (NUMROC, INDXG2P, INDXG2L, INDXL2G), 0-based, constexpr, and
// in 64-bit arithmetic (a local array may exceed 2^31 elements even when n does not).
// Pure index arithmetic: neither MPI nor Eigen.
#pragma once

#include "shardwise/layout.hpp"

namespace shardwise::scalapack {

/// One dimension of a block-cyclic distribution (defined in layout.hpp, where the arrays'
/// BlockCyclic dimensions use it too).
using BlockCyclicDim = shardwise::BlockCyclicDim;
/// A run of consecutive global indices held by one process (layout.hpp).
using IndexRun = shardwise::IndexRun;
using shardwise::owned_runs;

}  // namespace shardwise::scalapack
