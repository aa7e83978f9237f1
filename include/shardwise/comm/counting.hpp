// shardwise/comm/counting.hpp: a Communicator that counts what its rank sends.
//
// CountingCommunicator<C> forwards every operation to C and adds, per kind of
// operation, the bytes and messages that the ring schedule of detail/traffic.hpp
// sends from this rank, plus a call count. The counts are the cost model's, whatever
// algorithm the backend really runs: over the virtual cluster they equal its channel
// statistics, over MPI they are what the kernels are charged. Subgroups created
// through it count into the same CommCounters.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "shardwise/comm/collective_api.hpp"
#include "shardwise/comm/communicator.hpp"
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"
#include "shardwise/detail/partition.hpp"
#include "shardwise/detail/traffic.hpp"

namespace shardwise {

/// Traffic and number of calls of one kind of operation.
struct OpCount {
  Traffic traffic;
  std::int64_t calls = 0;

  friend constexpr bool operator==(const OpCount&, const OpCount&) = default;
};

/// What one rank sent, by kind. all_gather includes all_gather_v; reduce_scatter includes
/// reduce_scatter_block; point_to_point counts sends (recv calls are counted, with no traffic);
/// barrier counts calls only.
struct CommCounters {
  OpCount all_reduce;
  OpCount all_gather;
  OpCount reduce_scatter;
  OpCount broadcast;
  OpCount point_to_point;
  OpCount barrier;

  /// Traffic of every kind together.
  [[nodiscard]] constexpr Traffic total() const noexcept {
    return all_reduce.traffic + all_gather.traffic + reduce_scatter.traffic + broadcast.traffic +
           point_to_point.traffic + barrier.traffic;
  }
  constexpr void reset() noexcept { *this = CommCounters{}; }
};

/// Wraps a Communicator and counts into a CommCounters shared with its subgroups.
template <Communicator C>
class CountingCommunicator : public detail::CollectiveApi<CountingCommunicator<C>> {
 public:
  /// Counts into `counters` (a fresh CommCounters by default).
  explicit CountingCommunicator(C inner, std::shared_ptr<CommCounters> counters = std::make_shared<CommCounters>())
      : inner_(std::move(inner)), counters_(std::move(counters)) {}

  [[nodiscard]] int rank() const noexcept { return inner_.rank(); }
  [[nodiscard]] int size() const noexcept { return inner_.size(); }

  [[nodiscard]] const CommCounters& counters() const noexcept { return *counters_; }
  [[nodiscard]] const std::shared_ptr<CommCounters>& shared_counters() const noexcept { return counters_; }
  [[nodiscard]] C& inner() noexcept { return inner_; }
  [[nodiscard]] const C& inner() const noexcept { return inner_; }

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

  void do_all_reduce(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) {
    Raw::all_reduce(inner_, in, out, n, t, op);
    add(counters_->all_reduce, detail::ring_all_reduce_traffic(n, size(), rank(), bytes(t)));
  }
  void do_all_gather(const void* in, void* out, std::int64_t n, Datatype t) {
    Raw::all_gather(inner_, in, out, n, t);
    add(counters_->all_gather, detail::ring_all_gather_traffic(n * size(), n, size(), bytes(t)));
  }
  void do_all_gather_v(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t) {
    Raw::all_gather_v(inner_, in, out, counts, t);
    add(counters_->all_gather, detail::ring_all_gather_traffic(sum(counts), counts[static_cast<std::size_t>(next())],
                                                               size(), bytes(t)));
  }
  void do_reduce_scatter(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t,
                         ReduceOp op) {
    Raw::reduce_scatter(inner_, in, out, counts, t, op);
    add(counters_->reduce_scatter,
        detail::ring_reduce_scatter_traffic(sum(counts), counts[static_cast<std::size_t>(rank())], size(), bytes(t)));
  }
  void do_reduce_scatter_block(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) {
    Raw::reduce_scatter_block(inner_, in, out, n, t, op);
    add(counters_->reduce_scatter, detail::ring_reduce_scatter_traffic(n * size(), n, size(), bytes(t)));
  }
  void do_broadcast(void* buffer, std::int64_t n, Datatype t, int root) {
    Raw::broadcast(inner_, buffer, n, t, root);
    add(counters_->broadcast, detail::chain_broadcast_traffic(n, size(), rank(), root, bytes(t)));
  }
  void do_send(const void* data, std::int64_t n, Datatype t, int dest, int tag) {
    Raw::send(inner_, data, n, t, dest, tag);
    add(counters_->point_to_point, detail::message_traffic(n, bytes(t)));
  }
  void do_recv(void* data, std::int64_t n, Datatype t, int source, int tag) {
    Raw::recv(inner_, data, n, t, source, tag);
    add(counters_->point_to_point, {});
  }
  void do_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n, int source,
                   Datatype t, int tag) {
    Raw::sendrecv(inner_, send, send_n, dest, recv, recv_n, source, t, tag);
    add(counters_->point_to_point, detail::message_traffic(send_n, bytes(t)));
  }
  Request do_start_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n,
                            int source, Datatype t, int tag) {
    Request request = Raw::start_sendrecv(inner_, send, send_n, dest, recv, recv_n, source, t, tag);
    add(counters_->point_to_point, detail::message_traffic(send_n, bytes(t)));
    return request;
  }
  void do_barrier() {
    Raw::barrier(inner_);
    add(counters_->barrier, {});
  }
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
