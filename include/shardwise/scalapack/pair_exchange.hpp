// shardwise/scalapack/pair_exchange.hpp: the exchange both of the drop-in's redistributions
// make (p?gemm's general way, and the block-cyclic copy under p?tran, p?gemr2d and p?symm):
// packed elements from every process to every other, counted per pair, sent point to point
// only between processes that exchange data.
//
// Not MPI_Alltoallv: a block-cyclic operand's blocks may go to only some processes of a large
// grid, and an alltoallv may step through every pair, empty or not (Open MPI's pairwise
// algorithm: P - 1 steps). The messages travel on a duplicate of the grid's communicator, kept
// with it, so that none of the caller's own messages on that communicator can match them.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shardwise/comm/mpi.hpp"
#include "shardwise/scalapack/communicator_attribute.hpp"
#include "shardwise/scalapack/pgemm_call.hpp"

namespace shardwise::scalapack::detail {

/// Sets the exchange's counts and offsets (the callers have checked that every total fits an int).
inline void set_counts(const std::vector<std::int64_t>& counts, std::vector<int>& out, std::vector<int>& offsets) {
  out.resize(counts.size());
  offsets.resize(counts.size());
  std::int64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out[i] = static_cast<int>(counts[i]);
    offsets[i] = static_cast<int>(total);
    total += counts[i];
  }
}

/// The duplicate of `comm` the exchanges use: made at the first exchange over `comm` (on every
/// process of it at the same call, as the exchange is collective), kept with `comm` and freed
/// with it (communicator_attribute.hpp).
inline MPI_Comm exchange_comm(MPI_Comm comm) { return owned_attribute<MpiCommunicator>(comm, comm).native(); }

/// Where an exchange's data is: `elements` per rank, in rank order, at `data` (the counts and
/// offsets come from set_counts).
template <typename Scalar>
struct exchange_side {
  Scalar* data;
  const std::vector<int>& counts;
  const std::vector<int>& offsets;
};

/// Sends send.counts[d] elements to every other rank d and receives receive.counts[s] from
/// every other rank s, over exchange_comm(comm), where process `me` is rank `me`; runs
/// `meanwhile()` (the process's own share, which the exchange leaves alone) while the messages
/// travel. `requests` is the caller's, kept from call to call.
template <typename Scalar, typename Meanwhile>
void exchange_pairs(MPI_Comm comm, int me, exchange_side<const Scalar> send, exchange_side<Scalar> receive,
                    std::vector<MPI_Request>& requests, Meanwhile&& meanwhile) {
  const MPI_Comm dup = exchange_comm(comm);
  const MPI_Datatype type = mpi_type<Scalar>();
  const int ranks = static_cast<int>(send.counts.size());
  const auto at = [](int rank) { return static_cast<std::size_t>(rank); };
  requests.clear();
  requests.reserve(2 * at(ranks));
  // Receives first; sends from the next rank on, so that the ranks do not all start at rank 0.
  for (int i = 1; i < ranks; ++i) {
    const int from = (me + ranks - i) % ranks;
    if (receive.counts[at(from)] == 0) continue;
    requests.emplace_back();
    MPI_Irecv(receive.data + receive.offsets[at(from)], receive.counts[at(from)], type, from, 0, dup,
              &requests.back());
  }
  for (int i = 1; i < ranks; ++i) {
    const int to = (me + i) % ranks;
    if (send.counts[at(to)] == 0) continue;
    requests.emplace_back();
    MPI_Isend(send.data + send.offsets[at(to)], send.counts[at(to)], type, to, 0, dup, &requests.back());
  }
  meanwhile();
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

}  // namespace shardwise::scalapack::detail
