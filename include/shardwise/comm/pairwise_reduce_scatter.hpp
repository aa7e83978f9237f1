// shardwise/comm/pairwise_reduce_scatter.hpp: a sum-reduce-scatter of uneven parts by P - 1
// pairwise exchanges (MPICH's "pair" algorithm), over any Communicator.
//
// Why not the communicator's own reduce_scatter: Open MPI's MPI_Reduce_scatter takes about
// 4 x as long as this at 10,816 doubles on 2 ranks over shared memory (benchmarks/comm_bench,
// BM_ReduceScatter_*: 31 us against 8 us), and the ScaLAPACK drop-in's reduced way must not
// be slower than PDGEMM. Its traffic is also exactly what the drop-in models: every part but
// the rank's own, in P - 1 messages at most.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace shardwise::detail {

/// Sums the ranks' `parts` element-wise onto their owners: `packed` holds rank d's part at
/// offsets[d], counts[d] elements (every rank passes the same counts), and `own` receives this
/// rank's sum (counts[rank] elements); `scratch` holds at least counts[rank]. In step s each
/// rank sends rank + s its part and adds the one from rank - s; a step that carries nothing
/// either way is skipped by both sides. Collective over `comm`.
template <typename Scalar, typename Comm>
void pairwise_reduce_scatter(Comm& comm, std::span<const Scalar> packed, std::span<const int> counts,
                             std::span<const int> offsets, std::span<Scalar> own, std::span<Scalar> scratch) {
  const int ranks = comm.size(), me = comm.rank();
  const auto part = [&](int d) {
    const auto i = static_cast<std::size_t>(d);
    return packed.subspan(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(counts[i]));
  };
  const std::span<const Scalar> mine = part(me);
  for (std::size_t i = 0; i < mine.size(); ++i) own[i] = mine[i];
  const std::span<Scalar> arriving = scratch.first(mine.size());
  constexpr int tag = 0x5352;  // 'SR': apart from other point-to-point traffic on comm
  for (int step = 1; step < ranks; ++step) {
    const int to = (me + step) % ranks, from = (me - step + ranks) % ranks;
    const std::span<const Scalar> leaving = part(to);
    if (!leaving.empty() && !arriving.empty())
      comm.sendrecv(leaving, to, arriving, from, tag);
    else if (!leaving.empty())
      comm.send(leaving, to, tag);
    else if (!arriving.empty())
      comm.recv(arriving, from, tag);
    for (std::size_t i = 0; i < arriving.size(); ++i) own[i] += arriving[i];
  }
}

}  // namespace shardwise::detail
