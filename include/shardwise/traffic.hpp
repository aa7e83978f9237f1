// shardwise/traffic.hpp: bytes and messages a rank sends, in total and by kind of operation.
//
// One convention everywhere (cost model, counting wrapper, virtual cluster): a
// collective is counted as the ring algorithm would run it over the group, in
// group-rank order, each rank sending to rank + 1. For blocks b_0..b_{P-1}
// summing to N elements, rank r sends
//   all-gather:      N - b_{r+1}                 in P-1 messages
//   reduce-scatter:  N - b_r                     in P-1 messages
//   all-reduce:      reduce-scatter + all-gather over the P chunks of N (2(P-1) messages)
//   broadcast:       N, unless r is the last link of the chain root -> root+1 -> ...
// so the even case gives the textbook (P-1)/P * N and 2(P-1)/P * N. MPI may use
// other algorithms inside; the count is of the schedule, not of MPI's internals.
#pragma once

#include <compare>
#include <cstdint>

#include "shardwise/detail/partition.hpp"

namespace shardwise {

/// Bytes and messages sent by one rank.
struct Traffic {
  std::int64_t bytes = 0;     ///< Bytes sent.
  std::int64_t messages = 0;  ///< Messages sent.

  /// Sum and difference, member by member: totals, and the traffic between two snapshots.
  ///@{
  constexpr Traffic& operator+=(const Traffic& other) {
    bytes += other.bytes;
    messages += other.messages;
    return *this;
  }
  constexpr Traffic& operator-=(const Traffic& other) {
    bytes -= other.bytes;
    messages -= other.messages;
    return *this;
  }
  friend constexpr Traffic operator+(Traffic a, const Traffic& b) { return a += b; }
  friend constexpr Traffic operator-(Traffic a, const Traffic& b) { return a -= b; }
  ///@}
  /// Equal bytes and equal messages.
  friend constexpr bool operator==(const Traffic&, const Traffic&) = default;
  /// The planner's one order of costs: fewer bytes first, then fewer messages (a rank that sends
  /// more is the busier one; a plan whose busiest rank sends less is the cheaper one).
  friend constexpr auto operator<=>(const Traffic&, const Traffic&) = default;
};

/// Traffic and number of calls of one kind of operation.
struct OpCount {
  Traffic traffic;         ///< What the calls sent.
  std::int64_t calls = 0;  ///< Number of calls, including those that sent nothing.

  /// Sum and difference, member by member: totals, and the counts between two snapshots.
  ///@{
  constexpr OpCount& operator+=(const OpCount& other) {
    traffic += other.traffic;
    calls += other.calls;
    return *this;
  }
  constexpr OpCount& operator-=(const OpCount& other) {
    traffic -= other.traffic;
    calls -= other.calls;
    return *this;
  }
  friend constexpr OpCount operator+(OpCount a, const OpCount& b) { return a += b; }
  friend constexpr OpCount operator-(OpCount a, const OpCount& b) { return a -= b; }
  ///@}
  /// Equal traffic and equal number of calls.
  friend constexpr bool operator==(const OpCount&, const OpCount&) = default;
};

/// What one rank sent, by kind of operation: what CountingCommunicator counts and what the
/// cost models predict. all_gather includes all_gather_v; reduce_scatter includes
/// reduce_scatter_block; point_to_point counts sends (receives count as calls without
/// traffic); barrier counts calls only.
struct CommCounters {
  OpCount all_reduce;      ///< all_reduce, in place or not.
  OpCount all_gather;      ///< all_gather and all_gather_v.
  OpCount reduce_scatter;  ///< reduce_scatter and reduce_scatter_block.
  OpCount broadcast;       ///< broadcast; the last link of the chain sends nothing.
  OpCount point_to_point;  ///< send, recv, sendrecv and start_sendrecv; traffic is what was sent.
  OpCount barrier;         ///< barrier: calls only, no traffic.

  /// Traffic of every kind together.
  [[nodiscard]] constexpr Traffic total() const noexcept {
    return all_reduce.traffic + all_gather.traffic + reduce_scatter.traffic + broadcast.traffic +
           point_to_point.traffic + barrier.traffic;
  }
  /// Sets every count to zero.
  constexpr void reset() noexcept { *this = CommCounters{}; }

  /// Kind-by-kind sum and difference (the counts of one phase are the difference of two
  /// snapshots).
  ///@{
  constexpr CommCounters& operator+=(const CommCounters& o) {
    all_reduce += o.all_reduce;
    all_gather += o.all_gather;
    reduce_scatter += o.reduce_scatter;
    broadcast += o.broadcast;
    point_to_point += o.point_to_point;
    barrier += o.barrier;
    return *this;
  }
  constexpr CommCounters& operator-=(const CommCounters& o) {
    all_reduce -= o.all_reduce;
    all_gather -= o.all_gather;
    reduce_scatter -= o.reduce_scatter;
    broadcast -= o.broadcast;
    point_to_point -= o.point_to_point;
    barrier -= o.barrier;
    return *this;
  }
  friend constexpr CommCounters operator+(CommCounters a, const CommCounters& b) { return a += b; }
  friend constexpr CommCounters operator-(CommCounters a, const CommCounters& b) { return a -= b; }
  ///@}
  /// Equal counts of every kind.
  friend constexpr bool operator==(const CommCounters&, const CommCounters&) = default;
};

namespace detail {

/// Ring all-gather of `total` elements; `next_block` is the block of group rank r + 1.
[[nodiscard]] constexpr Traffic ring_all_gather_traffic(std::int64_t total, std::int64_t next_block,
                                                        int group_size, std::int64_t scalar_bytes) {
  if (group_size <= 1) return {};
  return {(total - next_block) * scalar_bytes, group_size - 1};
}

/// Ring reduce-scatter of `total` elements; `own_block` is what this rank keeps.
[[nodiscard]] constexpr Traffic ring_reduce_scatter_traffic(std::int64_t total, std::int64_t own_block,
                                                            int group_size, std::int64_t scalar_bytes) {
  if (group_size <= 1) return {};
  return {(total - own_block) * scalar_bytes, group_size - 1};
}

/// Ring all-reduce of n elements: reduce-scatter then all-gather of the P balanced chunks.
[[nodiscard]] constexpr Traffic ring_all_reduce_traffic(std::int64_t n, int group_size, int group_rank,
                                                        std::int64_t scalar_bytes) {
  if (group_size <= 1) return {};
  const int next = (group_rank + 1) % group_size;
  return ring_reduce_scatter_traffic(n, block_size(n, group_size, group_rank), group_size,
                                     scalar_bytes) +
         ring_all_gather_traffic(n, block_size(n, group_size, next), group_size, scalar_bytes);
}

/// Chain broadcast root -> root+1 -> ... -> root-1: everyone but the last link sends once.
[[nodiscard]] constexpr Traffic chain_broadcast_traffic(std::int64_t n, int group_size, int group_rank,
                                                        int root, std::int64_t scalar_bytes) {
  if (group_size <= 1) return {};
  const int last_link = (root + group_size - 1) % group_size;
  if (group_rank == last_link) return {};
  return {n * scalar_bytes, 1};
}

/// One point-to-point message.
[[nodiscard]] constexpr Traffic message_traffic(std::int64_t n, std::int64_t scalar_bytes) {
  return {n * scalar_bytes, 1};
}

}  // namespace detail
}  // namespace shardwise
