// shardwise/scalapack/block_cyclic.hpp: one dimension of ScaLAPACK's 2-D block-cyclic
// distribution, as index maps.
//
// A dimension of n indices is cut into blocks of nb; block b lives on process
// (src + b) mod procs, and each process stores its blocks one after another. These are the
// maps of ScaLAPACK's TOOLS (NUMROC, INDXG2P, INDXG2L, INDXL2G), 0-based, constexpr, and
// in 64-bit arithmetic (a local array may exceed 2^31 elements even when n does not).
// Pure index arithmetic: neither MPI nor Eigen.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace shardwise::scalapack {

/// One dimension of a block-cyclic distribution: `extent` indices in blocks of `block`, the
/// first block on process `source` of `processes`.
struct BlockCyclicDim {
  std::int64_t extent = 0;  ///< Global extent (M or N of the descriptor).
  std::int64_t block = 1;   ///< Block size (MB or NB).
  int source = 0;           ///< Process of the first block (RSRC or CSRC).
  int processes = 1;        ///< Processes along this dimension of the grid.

  /// The process that holds global index i (INDXG2P).
  [[nodiscard]] constexpr int owner(std::int64_t i) const {
    return static_cast<int>((source + i / block) % processes);
  }
  /// Where global index i sits in its owner's local array (INDXG2L).
  [[nodiscard]] constexpr std::int64_t local_index(std::int64_t i) const {
    return (i / (block * processes)) * block + i % block;
  }
  /// The global index of local index l on process p (INDXL2G).
  [[nodiscard]] constexpr std::int64_t global_index(std::int64_t l, int p) const {
    const std::int64_t distance = (processes + p - source) % processes;
    return ((l / block) * processes + distance) * block + l % block;
  }
  /// How many indices process p holds (NUMROC).
  [[nodiscard]] constexpr std::int64_t local_extent(int p) const {
    const std::int64_t distance = (processes + p - source) % processes;
    const std::int64_t blocks = extent / block;
    std::int64_t count = (blocks / processes) * block;
    const std::int64_t extra = blocks % processes;
    if (distance < extra) count += block;
    else if (distance == extra) count += extent % block;
    return count;
  }
};

/// A run of consecutive global indices held by one process: they are consecutive locally too.
struct IndexRun {
  std::int64_t global = 0;  ///< First global index.
  std::int64_t local = 0;   ///< Its local index on the process.
  std::int64_t length = 0;  ///< Indices in the run (at most one block).
};

/// The runs of [first, first + count) that process p holds, in increasing order.
inline std::vector<IndexRun> owned_runs(const BlockCyclicDim& d, int p, std::int64_t first, std::int64_t count) {
  std::vector<IndexRun> runs;
  const std::int64_t end = first + count;
  for (std::int64_t g = first; g < end;) {
    const std::int64_t b = g / d.block;
    const int owner = static_cast<int>((d.source + b) % d.processes);
    if (owner == p) {
      const std::int64_t block_end = std::min(end, (b + 1) * d.block);
      runs.push_back({g, d.local_index(g), block_end - g});
      g = block_end;
    } else {
      g = (b + (d.processes + p - owner) % d.processes) * d.block;  // p's next block
    }
  }
  return runs;
}

}  // namespace shardwise::scalapack
