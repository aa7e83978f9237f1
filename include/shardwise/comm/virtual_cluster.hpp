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
// DeadlockError listing who waits for what.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardwise/comm/collective_api.hpp"
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"
#include "shardwise/detail/partition.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

class VirtualCluster;
class VirtualCommunicator;

namespace detail {

inline void copy_bytes(void* dst, const void* src, std::size_t bytes) noexcept {
  if (bytes != 0 && dst != src) std::memcpy(dst, src, bytes);
}

template <typename T>
void reduce_as(void* acc, const void* in, std::int64_t n, ReduceOp op) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(in);
  switch (op) {
    case ReduceOp::sum:
      if constexpr (std::is_integral_v<T>) {  // wraps around like MPI, instead of overflowing
        using U = std::make_unsigned_t<T>;
        for (std::int64_t i = 0; i < n; ++i) a[i] = static_cast<T>(static_cast<U>(a[i]) + static_cast<U>(b[i]));
      } else {
        for (std::int64_t i = 0; i < n; ++i) a[i] += b[i];
      }
      break;
    case ReduceOp::max:
    case ReduceOp::min:
      if constexpr (!is_complex_v<T>) {  // refused for complex numbers before they get here
        for (std::int64_t i = 0; i < n; ++i)
          a[i] = (op == ReduceOp::max ? a[i] < b[i] : b[i] < a[i]) ? b[i] : a[i];
      }
      break;
  }
}

/// acc[i] = op(acc[i], in[i]) for n elements of `type`.
inline void reduce_into(Datatype type, ReduceOp op, void* acc, const void* in, std::int64_t n) {
  switch (type) {
    case Datatype::f32: return reduce_as<float>(acc, in, n, op);
    case Datatype::f64: return reduce_as<double>(acc, in, n, op);
    case Datatype::c64: return reduce_as<std::complex<float>>(acc, in, n, op);
    case Datatype::c128: return reduce_as<std::complex<double>>(acc, in, n, op);
    case Datatype::i32: return reduce_as<int>(acc, in, n, op);
    case Datatype::i64: return reduce_as<std::int64_t>(acc, in, n, op);
  }
}

/// A communicator of the virtual cluster: its members (world ranks, in group order) and its
/// barrier. Lives as long as the run.
struct VcContext {
  std::uint64_t id = 0;
  std::vector<int> members;
  int barrier_arrived = 0;
  std::uint64_t barrier_generation = 0;
};

/// User point-to-point and collective traffic never match each other.
enum class VcSpace : std::uint8_t { user, collective };

/// Tags of collective traffic: the kind of collective, so mismatched calls cannot pair up.
enum class VcCollective : int { all_reduce, all_gather, all_gather_v, reduce_scatter, broadcast };

inline const char* name_of(VcCollective kind) noexcept {
  switch (kind) {
    case VcCollective::all_reduce: return "all_reduce";
    case VcCollective::all_gather: return "all_gather";
    case VcCollective::all_gather_v: return "all_gather_v";
    case VcCollective::reduce_scatter: return "reduce_scatter";
    case VcCollective::broadcast: return "broadcast";
  }
  return "?";
}

struct VcMessage {
  const VcContext* context = nullptr;
  int source = 0;  // world rank
  int tag = 0;
  VcSpace space = VcSpace::user;
  Datatype type = Datatype::f64;
  std::int64_t count = 0;
  std::vector<std::byte> payload;
};

enum class VcWait : std::uint8_t { none, recv, barrier, create_group };

/// Per world rank: its queue, what it waits for, and spare payload buffers (owner only).
struct VcRank {
  std::condition_variable wake;
  std::deque<VcMessage> inbox;
  VcWait waiting = VcWait::none;
  const VcContext* wait_context = nullptr;
  int wait_source = 0;
  int wait_tag = 0;
  VcSpace wait_space = VcSpace::user;
  std::uint64_t wait_generation = 0;
  bool finished = false;
  std::vector<std::vector<std::byte>> spare;
};

/// The shared state of a virtual cluster. One mutex for everything: this is for tests.
class VcState {
 public:
  explicit VcState(int n) : n_(n), ranks_(std::make_unique<VcRank[]>(static_cast<std::size_t>(n))),
                            channels_(static_cast<std::size_t>(n) * static_cast<std::size_t>(n)) {}

  [[nodiscard]] int size() const noexcept { return n_; }

  /// Forgets everything of the previous run except the statistics.
  void begin_run() {
    const std::lock_guard lock(mutex_);
    for (int r = 0; r < n_; ++r) {
      VcRank& x = ranks_[static_cast<std::size_t>(r)];
      x.inbox.clear();
      x.waiting = VcWait::none;
      x.finished = false;
    }
    series_.clear();
    contexts_.clear();
    next_context_ = 0;
    VcContext& world = new_context({});
    for (int r = 0; r < n_; ++r) world.members.push_back(r);
    failed_ = deadlock_ = false;
    failed_rank_ = -1;
    failure_.clear();
    first_ = nullptr;
  }

  [[nodiscard]] VcContext& world() noexcept { return contexts_.front(); }

  /// A rank's function returned (error empty) or threw.
  void finish(int rank, const std::exception_ptr& error) {
    const std::lock_guard lock(mutex_);
    ranks_[static_cast<std::size_t>(rank)].finished = true;
    if (error) {
      if (!failed_) {
        failed_ = true;
        failed_rank_ = rank;
        failure_ = describe(error);
        first_ = error;
      }
      wake_everyone();
    } else if (!failed_ && everyone_blocked()) {
      declare_deadlock();
    }
  }

  [[nodiscard]] bool failed() {
    const std::lock_guard lock(mutex_);
    return failed_;
  }

  /// After the run: throws what ended it, if anything did.
  void rethrow_failure() {
    const std::lock_guard lock(mutex_);
    if (!failed_) return;
    if (deadlock_) throw DeadlockError(failure_);
    throw RemoteRankFailure(failed_rank_, failure_, first_);
  }

  /// Buffered send: queues the payload at `dest` (world rank) and never blocks.
  void send(int me, const VcContext& context, int dest, int tag, VcSpace space, Datatype type,
            std::int64_t count, std::vector<std::byte>&& payload) {
    const std::lock_guard lock(mutex_);
    throw_if_failed();
    Traffic& channel = channels_[index(me, dest)];
    channel.bytes += static_cast<std::int64_t>(payload.size());
    channel.messages += 1;
    VcRank& to = ranks_[static_cast<std::size_t>(dest)];
    to.inbox.push_back(VcMessage{&context, me, tag, space, type, count, std::move(payload)});
    to.wake.notify_one();
  }

  /// Blocks until a message from `source` (world rank) with `tag` arrives on `context`.
  VcMessage receive(int me, const VcContext& context, int source, int tag, VcSpace space) {
    std::unique_lock lock(mutex_);
    VcRank& self = ranks_[static_cast<std::size_t>(me)];
    for (;;) {
      throw_if_failed();
      const auto match = find_match(self.inbox, &context, source, tag, space);
      if (match != self.inbox.end()) {
        VcMessage message = std::move(*match);
        self.inbox.erase(match);
        return message;
      }
      self.waiting = VcWait::recv;
      self.wait_context = &context;
      self.wait_source = source;
      self.wait_tag = tag;
      self.wait_space = space;
      block(lock, self);
    }
  }

  /// Returns when every member of `context` has arrived. Sends no message.
  void barrier(int me, VcContext& context, VcWait kind = VcWait::barrier) {
    std::unique_lock lock(mutex_);
    barrier_locked(lock, me, context, kind);
  }

  /// The context shared by the members that ask for the same (parent, member list) for the
  /// k-th time; waits, like MPI_Comm_create_group, until every member has asked.
  VcContext& group(int me, const VcContext& parent, std::vector<int> members) {
    std::unique_lock lock(mutex_);
    throw_if_failed();
    const std::size_t position =
        static_cast<std::size_t>(std::find(members.begin(), members.end(), me) - members.begin());
    Series& series = series_[{parent.id, members}];
    if (series.taken.empty()) series.taken.assign(members.size(), 0);
    const std::size_t k = series.taken[position]++;
    if (k == series.contexts.size()) series.contexts.push_back(&new_context(std::move(members)));
    VcContext& context = *series.contexts[k];
    barrier_locked(lock, me, context, VcWait::create_group);
    return context;
  }

  /// A payload buffer of `bytes`, reusing one this rank received before (owner thread only).
  std::vector<std::byte> take_buffer(int me, std::size_t bytes) {
    auto& spare = ranks_[static_cast<std::size_t>(me)].spare;
    std::vector<std::byte> buffer;
    for (auto it = spare.begin(); it != spare.end(); ++it)
      if (it->capacity() >= bytes) {
        buffer = std::move(*it);
        spare.erase(it);
        break;
      }
    buffer.resize(bytes);
    return buffer;
  }
  void recycle(int me, std::vector<std::byte>&& buffer) {
    auto& spare = ranks_[static_cast<std::size_t>(me)].spare;
    if (spare.size() < 4 && buffer.capacity() != 0) spare.push_back(std::move(buffer));
  }

  [[nodiscard]] Traffic channel(int from, int to) {
    const std::lock_guard lock(mutex_);
    return channels_[index(from, to)];
  }
  void reset_stats() {
    const std::lock_guard lock(mutex_);
    std::fill(channels_.begin(), channels_.end(), Traffic{});
  }

 private:
  struct Series {
    std::vector<VcContext*> contexts;
    std::vector<std::size_t> taken;  // per member: how many of `contexts` it has asked for
  };

  [[nodiscard]] std::size_t index(int from, int to) const noexcept {
    return static_cast<std::size_t>(from) * static_cast<std::size_t>(n_) + static_cast<std::size_t>(to);
  }

  VcContext& new_context(std::vector<int> members) {
    contexts_.push_back(VcContext{next_context_++, std::move(members), 0, 0});
    return contexts_.back();
  }

  static std::deque<VcMessage>::iterator find_match(std::deque<VcMessage>& inbox, const VcContext* context,
                                                    int source, int tag, VcSpace space) {
    return std::find_if(inbox.begin(), inbox.end(), [&](const VcMessage& m) {
      return m.context == context && m.source == source && m.tag == tag && m.space == space;
    });
  }

  void barrier_locked(std::unique_lock<std::mutex>& lock, int me, VcContext& context, VcWait kind) {
    throw_if_failed();
    const std::uint64_t generation = context.barrier_generation;
    if (++context.barrier_arrived == static_cast<int>(context.members.size())) {
      context.barrier_arrived = 0;
      ++context.barrier_generation;
      for (int member : context.members) ranks_[static_cast<std::size_t>(member)].wake.notify_one();
      return;
    }
    VcRank& self = ranks_[static_cast<std::size_t>(me)];
    while (context.barrier_generation == generation) {
      throw_if_failed();
      self.waiting = kind;
      self.wait_context = &context;
      self.wait_generation = generation;
      block(lock, self);
    }
  }

  /// Sleeps until woken, unless that would complete a deadlock.
  void block(std::unique_lock<std::mutex>& lock, VcRank& self) {
    if (everyone_blocked())
      declare_deadlock();
    else
      self.wake.wait(lock);
    self.waiting = VcWait::none;
  }

  /// True when at least one rank still runs and every such rank waits for something that
  /// is not there.
  bool everyone_blocked() {
    bool anyone_left = false;
    for (int r = 0; r < n_; ++r) {
      VcRank& x = ranks_[static_cast<std::size_t>(r)];
      if (x.finished) continue;
      anyone_left = true;
      switch (x.waiting) {
        case VcWait::none:
          return false;
        case VcWait::recv:
          if (find_match(x.inbox, x.wait_context, x.wait_source, x.wait_tag, x.wait_space) != x.inbox.end())
            return false;
          break;
        case VcWait::barrier:
        case VcWait::create_group:
          if (x.wait_context->barrier_generation != x.wait_generation) return false;
          break;
      }
    }
    return anyone_left;
  }

  static std::string members_of(const VcContext& context) {
    std::string text = "[";
    for (std::size_t i = 0; i < context.members.size(); ++i) {
      if (i != 0) text += ' ';
      text += std::to_string(context.members[i]);
    }
    return text + "]";
  }

  void declare_deadlock() {
    std::string text =
        "virtual cluster deadlock: every rank still running waits for something no rank will provide "
        "(world ranks; communicators by their members)";
    for (int r = 0; r < n_; ++r) {
      const VcRank& x = ranks_[static_cast<std::size_t>(r)];
      text += "\n  rank " + std::to_string(r) + ": ";
      if (x.finished) {
        text += "has finished";
        continue;
      }
      const std::string where = " on communicator " + members_of(*x.wait_context);
      switch (x.waiting) {
        case VcWait::recv:
          text += x.wait_space == VcSpace::user
                      ? "waits in recv from rank " + std::to_string(x.wait_source) + " with tag " +
                            std::to_string(x.wait_tag)
                      : std::string("waits in ") + name_of(static_cast<VcCollective>(x.wait_tag)) +
                            " for data from rank " + std::to_string(x.wait_source);
          text += where;
          if (!x.inbox.empty()) text += " (" + std::to_string(x.inbox.size()) + " other message(s) queued)";
          break;
        case VcWait::barrier:
          text += "waits in barrier" + where + " (" + std::to_string(x.wait_context->barrier_arrived) + " of " +
                  std::to_string(x.wait_context->members.size()) + " arrived)";
          break;
        case VcWait::create_group:
          text += "waits in create_group of " + members_of(*x.wait_context) + " for the other members";
          break;
        case VcWait::none:
          text += "is running";
          break;
      }
    }
    failed_ = deadlock_ = true;
    failure_ = std::move(text);
    wake_everyone();
  }

  void wake_everyone() {
    for (int r = 0; r < n_; ++r) ranks_[static_cast<std::size_t>(r)].wake.notify_all();
  }

  void throw_if_failed() const {
    if (!failed_) [[likely]]
      return;
    if (deadlock_) throw DeadlockError(failure_);
    throw RemoteRankFailure(failed_rank_, failure_);
  }

  static std::string describe(const std::exception_ptr& error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "an exception that is not a std::exception";
    }
  }

  std::mutex mutex_;
  int n_;
  std::unique_ptr<VcRank[]> ranks_;
  std::vector<Traffic> channels_;
  std::deque<VcContext> contexts_;  // stable addresses
  std::map<std::pair<std::uint64_t, std::vector<int>>, Series> series_;
  std::uint64_t next_context_ = 0;
  bool failed_ = false;
  bool deadlock_ = false;
  int failed_rank_ = -1;
  std::string failure_;
  std::exception_ptr first_;
};

/// Where a virtual receive lands; also the inline state of a virtual Request.
struct VcReceipt {
  VcState* state;
  const VcContext* context;
  int me;      // world rank of the receiver
  int source;  // world rank
  int tag;
  VcSpace space;
  Datatype type;
  std::int64_t count;
  void* out;

  /// Receives the message and checks its type and size.
  [[nodiscard]] VcMessage take(const char* function) const {
    VcMessage message = state->receive(me, *context, source, tag, space);
    if (message.type != type || message.count != count) [[unlikely]]
      throw CommError(std::string("shardwise::") + function + " (virtual cluster): rank " + group_rank(me) +
                      " expected " + std::to_string(count) + " " + name_of(type) + " from rank " +
                      group_rank(source) + " but received " + std::to_string(message.count) + " " +
                      name_of(message.type) +
                      (space == VcSpace::user
                           ? "; a message must be received with exactly its size and type"
                           : "; do all ranks call the same collectives, in the same order, with matching sizes?"));
    return message;
  }
  /// take(), then copy into `out`.
  void complete(const char* function) const {
    VcMessage message = take(function);
    copy_bytes(out, message.payload.data(), message.payload.size());
    state->recycle(me, std::move(message.payload));
  }

 private:
  [[nodiscard]] std::string group_rank(int world_rank) const {
    const auto& m = context->members;
    return std::to_string(std::find(m.begin(), m.end(), world_rank) - m.begin());
  }
};

}  // namespace detail

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
