// shardwise/comm/virtual_cluster.hpp: N ranks as threads in one process (virtual devices
// joined by virtual channels).
//
//   shardwise::VirtualCluster cluster(4);
//   cluster.run([](shardwise::VirtualCommunicator& comm) { ... same code as under MPI ... });
//   cluster.channel(0, 1);   // bytes and messages rank 0 sent to rank 1
//
// Point-to-point is the only primitive: a send copies the data into the receiver's queue
// and never blocks; a receive takes the first queued message from that source with that
// tag (MPI's non-overtaking order). Collectives are ring algorithms built on it, in
// group-rank order (send to rank + 1, receive from rank - 1), in a matching space of their
// own, sending exactly the messages that traffic.hpp counts, zero-length ones
// included; so the channel statistics equal the cost model's formulas. The barrier sends
// nothing. (Buffered sends are more forgiving than MPI_Send, which may wait for the receiver:
// code that exchanges data with two plain sends passes here and can hang under MPI.)
//
// Failures never hang: the first exception that escapes a rank's function wakes every
// blocked rank with RemoteRankFailure ("rank 3 failed first: ..."), and run() throws it on
// the caller. When every rank still running waits for something nobody can provide
// (a message never sent, a barrier a finished rank will not join), all of them fail with
// DeadlockError listing who waits for what. The state the ranks share (queues, matching, the
// deadlock check) is in comm/virtual_cluster_state.hpp.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "shardwise/comm/collective_api.hpp"
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"
#include "shardwise/comm/virtual_cluster_state.hpp"
#include "shardwise/detail/partition.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

/// One rank's handle on a virtual cluster (or a subgroup of it). Valid during VirtualCluster::run.
class VirtualCommunicator : public CollectiveApi<VirtualCommunicator> {
 public:
  /// Moves the handle: the result is the same rank of the same group.
  ///@{
  VirtualCommunicator(VirtualCommunicator&&) noexcept = default;
  VirtualCommunicator& operator=(VirtualCommunicator&&) noexcept = default;
  ///@}
  VirtualCommunicator(const VirtualCommunicator&) = delete;
  VirtualCommunicator& operator=(const VirtualCommunicator&) = delete;
  ~VirtualCommunicator() = default;

  /// Rank in this communicator.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// Number of ranks in this communicator.
  [[nodiscard]] int size() const noexcept { return static_cast<int>(context_->members.size()); }
  /// Rank in the whole cluster.
  [[nodiscard]] int world_rank() const noexcept { return me_; }
  /// World ranks of the members, in group-rank order.
  [[nodiscard]] std::span<const int> world_ranks() const noexcept { return context_->members; }

 private:
  friend class VirtualCluster;
  friend struct detail::RawAccess;
  using Space = detail::VcSpace;
  using Kind = detail::VcCollective;
  using Datatype = detail::Datatype;

  VirtualCommunicator(detail::VcState& state, detail::VcContext& context, int rank)
      : state_(&state), context_(&context), rank_(rank), me_(context.members[static_cast<std::size_t>(rank)]),
        offsets_(context.members.size() + 1) {}

  [[nodiscard]] int world(int group_rank) const noexcept {
    return context_->members[static_cast<std::size_t>(group_rank)];
  }
  [[nodiscard]] int right() const noexcept { return world((rank_ + 1) % size()); }
  [[nodiscard]] int left() const noexcept { return world((rank_ + size() - 1) % size()); }

  void post(int dest, int tag, Space space, Datatype type, const void* data, std::int64_t count) {
    const std::size_t bytes = static_cast<std::size_t>(count) * detail::size_of(type);
    std::vector<std::byte> payload = state_->take_buffer(me_, bytes);
    detail::copy_bytes(payload.data(), data, bytes);
    state_->send(me_, *context_, dest, tag, space, type, count, std::move(payload));
  }
  void forward(int dest, Kind kind, detail::VcMessage&& message) {
    state_->send(me_, *context_, dest, static_cast<int>(kind), Space::collective, message.type, message.count,
                 std::move(message.payload));
  }
  detail::VcMessage take(Kind kind, Datatype type, std::int64_t count) {
    return receipt(Space::collective, nullptr, count, type, (rank_ + size() - 1) % size(), static_cast<int>(kind))
        .take(detail::name_of(kind));
  }
  [[nodiscard]] detail::VcReceipt receipt(Space space, void* out, std::int64_t count, Datatype type, int source,
                                          int tag) const noexcept {
    return {state_, context_, me_, world(source), tag, space, type, count, out};
  }

  // Ring all-gather: at step s send block (r - s) mod P, receive block (r - s - 1) mod P.
  // blocks(i) gives {offset, count} of block i in elements.
  template <typename Blocks>
  void ring_all_gather(const void* in, void* out, Datatype type, Kind kind, Blocks blocks) {
    const std::size_t es = detail::size_of(type);
    auto* o = static_cast<std::byte*>(out);
    const auto [own_offset, own_count] = blocks(rank_);
    detail::copy_bytes(o + own_offset * es, in, static_cast<std::size_t>(own_count) * es);
    const int p = size();
    if (p == 1) return;
    post(right(), static_cast<int>(kind), Space::collective, type, o + own_offset * es, own_count);
    for (int s = 0; s < p - 1; ++s) {
      const auto [offset, count] = blocks((rank_ - s - 1 + p) % p);
      detail::VcMessage message = take(kind, type, count);
      detail::copy_bytes(o + offset * es, message.payload.data(), message.payload.size());
      if (s < p - 2)
        forward(right(), kind, std::move(message));
      else
        state_->recycle(me_, std::move(message.payload));
    }
  }

  // Ring reduce-scatter: at step s send the accumulated chunk (r - s - 1) mod P, receive chunk
  // (r - s - 2) mod P and reduce into it; the last chunk received is this rank's own.
  template <typename Blocks>
  void ring_reduce_scatter(const void* in, void* own_out, Datatype type, ReduceOp op, Kind kind, Blocks blocks) {
    const std::size_t es = detail::size_of(type);
    const auto* i = static_cast<const std::byte*>(in);
    const int p = size();
    if (p == 1) {
      const auto [offset, count] = blocks(0);
      detail::copy_bytes(own_out, i + offset * es, static_cast<std::size_t>(count) * es);
      return;
    }
    {
      const auto [offset, count] = blocks((rank_ + p - 1) % p);
      post(right(), static_cast<int>(kind), Space::collective, type, i + offset * es, count);
    }
    for (int s = 1; s < p; ++s) {
      const auto [offset, count] = blocks((rank_ - s - 1 + p) % p);
      detail::VcMessage message = take(kind, type, count);
      detail::reduce_into(type, op, message.payload.data(), i + offset * es, count);
      if (s < p - 1) {
        forward(right(), kind, std::move(message));
      } else {
        detail::copy_bytes(own_out, message.payload.data(), message.payload.size());
        state_->recycle(me_, std::move(message.payload));
      }
    }
  }

  /// offsets_[i] = sum of counts[0..i).
  void prefix_sums(std::span<const std::int64_t> counts) noexcept {
    offsets_[0] = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) offsets_[i + 1] = offsets_[i] + counts[i];
  }

  void do_all_reduce(const void* in, void* out, std::int64_t n, Datatype type, ReduceOp op) {
    const int p = size();
    auto chunks = [n, p](int i) { return std::pair{detail::block_begin(n, p, i), detail::block_size(n, p, i)}; };
    const std::int64_t own = detail::block_begin(n, p, rank_);
    auto* o = static_cast<std::byte*>(out);
    ring_reduce_scatter(in, o + own * static_cast<std::int64_t>(detail::size_of(type)), type, op, Kind::all_reduce,
                        chunks);
    ring_all_gather(o + own * static_cast<std::int64_t>(detail::size_of(type)), out, type, Kind::all_reduce, chunks);
  }
  void do_all_gather(const void* in, void* out, std::int64_t n, Datatype type) {
    ring_all_gather(in, out, type, Kind::all_gather, [n](int i) { return std::pair{i * n, n}; });
  }
  void do_all_gather_v(const void* in, void* out, std::span<const std::int64_t> counts, Datatype type) {
    prefix_sums(counts);
    ring_all_gather(in, out, type, Kind::all_gather_v, [&](int i) {
      return std::pair{offsets_[static_cast<std::size_t>(i)], counts[static_cast<std::size_t>(i)]};
    });
  }
  void do_reduce_scatter(const void* in, void* out, std::span<const std::int64_t> counts, Datatype type,
                         ReduceOp op) {
    prefix_sums(counts);
    ring_reduce_scatter(in, out, type, op, Kind::reduce_scatter, [&](int i) {
      return std::pair{offsets_[static_cast<std::size_t>(i)], counts[static_cast<std::size_t>(i)]};
    });
  }
  void do_reduce_scatter_block(const void* in, void* out, std::int64_t n, Datatype type, ReduceOp op) {
    ring_reduce_scatter(in, out, type, op, Kind::reduce_scatter, [n](int i) { return std::pair{i * n, n}; });
  }
  // Chain root -> root+1 -> ... -> root-1; every link but the last forwards what it got.
  void do_broadcast(void* buffer, std::int64_t n, Datatype type, int root) {
    const int p = size();
    if (p == 1) return;
    if (rank_ == root) return post(right(), static_cast<int>(Kind::broadcast), Space::collective, type, buffer, n);
    detail::VcMessage message = take(Kind::broadcast, type, n);
    detail::copy_bytes(buffer, message.payload.data(), message.payload.size());
    if (rank_ != (root + p - 1) % p)
      forward(right(), Kind::broadcast, std::move(message));
    else
      state_->recycle(me_, std::move(message.payload));
  }
  void do_send(const void* data, std::int64_t n, Datatype type, int dest, int tag) {
    post(world(dest), tag, Space::user, type, data, n);
  }
  void do_recv(void* data, std::int64_t n, Datatype type, int source, int tag) {
    receipt(Space::user, data, n, type, source, tag).complete("recv");
  }
  void do_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n, int source,
                   Datatype type, int tag) {
    do_send(send, send_n, type, dest, tag);  // buffered: cannot block
    receipt(Space::user, recv, recv_n, type, source, tag).complete("sendrecv");
  }

  static constexpr Request::Ops request_ops{
      [](void* state) { static_cast<detail::VcReceipt*>(state)->complete("start_sendrecv"); },
      [](void* state) noexcept {
        // Unwinding or failed: nobody will read the buffer, so do not wait for it.
        auto* receipt = static_cast<detail::VcReceipt*>(state);
        if (std::uncaught_exceptions() > 0 || receipt->state->failed()) return;
        try {
          receipt->complete("start_sendrecv");
        } catch (...) {  // a destructor must not throw; the next operation reports the failure
        }
      }};

  Request do_start_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n,
                            int source, Datatype type, int tag) {
    do_send(send, send_n, type, dest, tag);
    return Request(&request_ops, receipt(Space::user, recv, recv_n, type, source, tag));
  }
  void do_barrier() { state_->barrier(me_, *context_); }

  VirtualCommunicator do_create_group(std::span<const int> ranks) {
    std::vector<int> members(ranks.size());
    for (std::size_t i = 0; i < ranks.size(); ++i) members[i] = world(ranks[i]);
    detail::VcContext& group = state_->group(me_, *context_, std::move(members));
    const auto position = std::find(group.members.begin(), group.members.end(), me_) - group.members.begin();
    return VirtualCommunicator(*state_, group, static_cast<int>(position));
  }

  detail::VcState* state_;
  detail::VcContext* context_;
  int rank_;
  int me_;
  std::vector<std::int64_t> offsets_;  // scratch for the v-collectives, sized once
};

/// N ranks as threads of this process.
class VirtualCluster {
 public:
  /// A cluster of `ranks` ranks (at least 1).
  explicit VirtualCluster(int ranks) : state_(make_state(ranks)) {}

  /// Number of ranks.
  [[nodiscard]] int size() const noexcept { return state_->size(); }

  /// Runs f(VirtualCommunicator&) on every rank, each on its own thread, and joins them. The
  /// first exception that escapes a rank is rethrown here as RemoteRankFailure naming that rank
  /// (its first_exception() holds the original); a deadlock is rethrown as DeadlockError.
  /// Communicators are valid only during the run. Statistics add up over runs.
  template <std::invocable<VirtualCommunicator&> F>
  void run(F&& f) {
    state_->begin_run();
    {
      std::vector<std::jthread> threads;
      threads.reserve(static_cast<std::size_t>(size()));
      for (int r = 0; r < size(); ++r) {
        try {
          threads.emplace_back([this, &f, r] {
            std::exception_ptr error;
            try {
              VirtualCommunicator comm(*state_, state_->world(), r);
              std::invoke(f, comm);
            } catch (...) {
              error = std::current_exception();
            }
            state_->finish(r, error);
          });
        } catch (...) {  // could not start rank r: count it and the rest as failed, so nobody waits
          for (int rest = r; rest < size(); ++rest) state_->finish(rest, std::current_exception());
          break;
        }
      }
    }  // joins
    state_->rethrow_failure();
  }

  /// Bytes and messages world rank `from` has sent to world rank `to` (collectives included).
  [[nodiscard]] Traffic channel(int from, int to) const {
    detail::check_rank("VirtualCluster::channel", "from", from, size());
    detail::check_rank("VirtualCluster::channel", "to", to, size());
    return state_->channel(from, to);
  }
  /// Everything world rank `rank` has sent.
  [[nodiscard]] Traffic sent_by(int rank) const {
    detail::check_rank("VirtualCluster::sent_by", "rank", rank, size());
    Traffic total;
    for (int to = 0; to < size(); ++to) total += state_->channel(rank, to);
    return total;
  }
  /// Sets every channel's statistics back to zero.
  void reset_stats() { state_->reset_stats(); }

 private:
  static std::unique_ptr<detail::VcState> make_state(int ranks) {
    if (ranks < 1)
      throw std::invalid_argument("shardwise::VirtualCluster: needs at least 1 rank, got " + std::to_string(ranks));
    return std::make_unique<detail::VcState>(ranks);
  }

  std::unique_ptr<detail::VcState> state_;
};

/// VirtualCluster(ranks).run(f).
template <std::invocable<VirtualCommunicator&> F>
void run_virtual_cluster(int ranks, F&& f) {
  VirtualCluster(ranks).run(std::forward<F>(f));
}

}  // namespace shardwise
