// shardwise/kernels/workspace.hpp: reusable scratch buffers for the kernels.
//
// Gathered operands, ring chunks and SUMMA panels live in per-thread buffers that
// only ever grow, so a kernel called in a loop allocates on its first call and
// never again. Per thread, because a virtual cluster runs each rank on a thread.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
#include "shardwise/detail/simulation.hpp"  // SMPI: buffers may be folded
#endif

namespace shardwise::detail {

/// Roles of the scratch buffers, one role each: a caller never holds on to a slot that a
/// later call may overwrite for another purpose.
enum class Slot : std::size_t {
  a_0,     ///< the executor: A as it holds it after a gather or a pack (two buffers, used in turn)
  a_1,
  b_0,     ///< the executor: B, likewise
  b_1,
  c_ping,  ///< the executor: C between steps (two buffers, used in turn)
  c_pong,
  c_pack,  ///< the executor: C in the order a collective needs
  unpack,  ///< the executor: a gathered or scattered block before it is put in another order
  ring_0,  ///< the executor: ring chunks and SUMMA panels
  ring_1,
  ring_2,
  layer_0,  ///< a layer's intermediates that live from one executor call to the next
  layer_1,
  count_
};

class Workspace {
 public:
  /// A buffer of at least `bytes`, 64-byte aligned (a cache line, an AVX-512 vector).
  [[gnu::noinline]] void* get(Slot slot, std::size_t bytes) {
    Buffer& b = buffers_[static_cast<std::size_t>(slot)];
    b.requested = std::max(b.requested, bytes);
    if (b.capacity < bytes) {
      const std::size_t rounded = (bytes + 63) / 64 * 64;
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
      void* memory = simulation::allocate(rounded);
#else
      void* memory = std::aligned_alloc(64, rounded);
#endif
      if (memory == nullptr) throw std::bad_alloc();
      b.data.reset(memory);
      b.capacity = rounded;
    }
    return b.data.get();
  }

  /// Bytes held by all slots (for memory reports).
  [[nodiscard]] std::size_t bytes_held() const {
    std::size_t total = 0;
    for (const Buffer& b : buffers_) total += b.capacity;
    return total;
  }

  /// The most bytes asked of each slot, summed: bytes_held() but for the rounding to 64 bytes
  /// (what the footprint model counts).
  [[nodiscard]] std::size_t bytes_requested() const {
    std::size_t total = 0;
    for (const Buffer& b : buffers_) total += b.requested;
    return total;
  }

  /// Gives the memory back (the next call allocates again).
  void release() {
    for (Buffer& b : buffers_) b = Buffer{};
  }

  /// Scratch for per-rank counts: grows, never shrinks.
  std::vector<std::int64_t>& counts() { return counts_; }

  /// This thread's workspace.
  static Workspace& local() {
    thread_local Workspace workspace;
    return workspace;
  }

 private:
  struct Free {
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
    void operator()(void* p) const { simulation::deallocate(p); }
#else
    void operator()(void* p) const { std::free(p); }
#endif
  };
  struct Buffer {
    std::unique_ptr<void, Free> data;
    std::size_t capacity = 0;
    std::size_t requested = 0;  ///< the most asked of it
  };
  std::array<Buffer, static_cast<std::size_t>(Slot::count_)> buffers_{};
  std::vector<std::int64_t> counts_;
};

/// Typed view of a scratch slot with room for `count` scalars.
template <typename Scalar>
Scalar* scratch(Slot slot, std::int64_t count) {
  return static_cast<Scalar*>(Workspace::local().get(slot, static_cast<std::size_t>(count) * sizeof(Scalar)));
}

}  // namespace shardwise::detail
