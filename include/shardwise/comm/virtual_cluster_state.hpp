// shardwise/comm/virtual_cluster_state.hpp: what the ranks of a virtual cluster share (its
// communicators, per rank its message queue and what it waits for, the deadlock check) and the
// message matching that VirtualCommunicator (comm/virtual_cluster.hpp) runs on: one mutex for
// everything, as this is for tests and laptops. Implementation detail of virtual_cluster.hpp.
#pragma once

#include <algorithm>
#include <complex>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"
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

}  // namespace shardwise
