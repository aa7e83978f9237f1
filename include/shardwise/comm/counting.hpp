// shardwise/comm/counting.hpp: a Communicator that counts what its rank sends.
//
// CountingCommunicator<C> forwards every operation to C and adds, per kind of
// operation, the bytes and messages that the ring schedule of traffic.hpp
// sends from this rank, plus a call count. The counts are the cost model's, whatever
// algorithm the backend really runs: over the virtual cluster they equal its channel
// statistics, over MPI they are what the kernels are charged. Subgroups created
// through it count into the same CommCounters.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "shardwise/comm/collective_api.hpp"
#include "shardwise/comm/communicator.hpp"
#include "shardwise/comm/operations.hpp"
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"
#include "shardwise/detail/partition.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

/// Wraps a Communicator and counts into a CommCounters shared with its subgroups.
template <Communicator C>
class CountingCommunicator : public CollectiveApi<CountingCommunicator<C>> {
 public:
  /// Counts into `counters` (a fresh CommCounters by default).
  explicit CountingCommunicator(C inner, std::shared_ptr<CommCounters> counters = std::make_shared<CommCounters>())
      : inner_(std::move(inner)), counters_(std::move(counters)) {}

  /// This rank in the group, 0..size()-1 (the wrapped communicator's).
  [[nodiscard]] int rank() const noexcept { return inner_.rank(); }
  /// Number of ranks in the group.
  [[nodiscard]] int size() const noexcept { return inner_.size(); }

  /// What this rank and its subgroups have sent so far.
  [[nodiscard]] const CommCounters& counters() const noexcept { return *counters_; }
  /// The counters themselves, shared with the subgroups created through this communicator
  /// (to reset() them, or to count another communicator into them).
  [[nodiscard]] const std::shared_ptr<CommCounters>& shared_counters() const noexcept { return counters_; }
  /// The wrapped communicator; operations called on it directly are not counted.
  ///@{
  [[nodiscard]] C& inner() noexcept { return inner_; }
  [[nodiscard]] const C& inner() const noexcept { return inner_; }
  ///@}

 private:
  friend struct detail::RawAccess;
  using Datatype = detail::Datatype;
  using Raw = detail::RawAccess;

  static void add(OpCount& count, const Traffic& traffic) noexcept {
    count.traffic += traffic;
    count.calls += 1;
  }
  static std::int64_t bytes(Datatype t) noexcept { return static_cast<std::int64_t>(detail::size_of(t)); }
  [[nodiscard]] int next() const noexcept { return (rank() + 1) % size(); }

  /// Runs `call`, then `count`; returns what `call` returned.
  template <typename Call, typename Count>
  static decltype(auto) counted(Call&& call, Count&& count) {
    if constexpr (std::is_void_v<std::invoke_result_t<Call>>) {
      call();
      count();
    } else {
      auto result = call();
      count();
      return result;
    }
  }

  // Each operation is forwarded, then counted by count_<name> below.
#define SHARDWISE_COMM_COUNTED(R, name, params, args)                                                   \
  R do_##name params {                                                                                   \
    return counted([&] { return Raw::name(inner_ SHARDWISE_COMM_COMMA_LIST args); },                     \
                   [&] { count_##name args; });                                                          \
  }
  SHARDWISE_COMM_OPERATIONS(SHARDWISE_COMM_COUNTED)
#undef SHARDWISE_COMM_COUNTED

  void count_all_reduce(const void*, void*, std::int64_t n, Datatype t, ReduceOp) {
    add(counters_->all_reduce, detail::ring_all_reduce_traffic(n, size(), rank(), bytes(t)));
  }
  void count_all_gather(const void*, void*, std::int64_t n, Datatype t) {
    add(counters_->all_gather, detail::ring_all_gather_traffic(n * size(), n, size(), bytes(t)));
  }
  void count_all_gather_v(const void*, void*, std::span<const std::int64_t> counts, Datatype t) {
    add(counters_->all_gather, detail::ring_all_gather_traffic(sum(counts), counts[static_cast<std::size_t>(next())],
                                                               size(), bytes(t)));
  }
  void count_reduce_scatter(const void*, void*, std::span<const std::int64_t> counts, Datatype t, ReduceOp) {
    add(counters_->reduce_scatter,
        detail::ring_reduce_scatter_traffic(sum(counts), counts[static_cast<std::size_t>(rank())], size(), bytes(t)));
  }
  void count_reduce_scatter_block(const void*, void*, std::int64_t n, Datatype t, ReduceOp) {
    add(counters_->reduce_scatter, detail::ring_reduce_scatter_traffic(n * size(), n, size(), bytes(t)));
  }
  void count_broadcast(void*, std::int64_t n, Datatype t, int root) {
    add(counters_->broadcast, detail::chain_broadcast_traffic(n, size(), rank(), root, bytes(t)));
  }
  void count_send(const void*, std::int64_t n, Datatype t, int, int) {
    add(counters_->point_to_point, detail::message_traffic(n, bytes(t)));
  }
  void count_recv(void*, std::int64_t, Datatype, int, int) { add(counters_->point_to_point, {}); }
  void count_sendrecv(const void*, std::int64_t send_n, int, void*, std::int64_t, int, Datatype t, int) {
    add(counters_->point_to_point, detail::message_traffic(send_n, bytes(t)));
  }
  void count_start_sendrecv(const void*, std::int64_t send_n, int, void*, std::int64_t, int, Datatype t, int) {
    add(counters_->point_to_point, detail::message_traffic(send_n, bytes(t)));
  }
  void count_barrier() { add(counters_->barrier, {}); }
  CountingCommunicator do_create_group(std::span<const int> ranks) {
    return CountingCommunicator(Raw::create_group(inner_, ranks), counters_);
  }

  static std::int64_t sum(std::span<const std::int64_t> counts) noexcept {
    std::int64_t total = 0;
    for (std::int64_t c : counts) total += c;
    return total;
  }

  C inner_;
  std::shared_ptr<CommCounters> counters_;
};

}  // namespace shardwise
