// shardwise/comm/request.hpp: the handle of a nonblocking operation (start_sendrecv).
//
// One concrete type for every backend, so that AnyCommunicator and the counting
// wrapper pass it through unchanged. A backend stores a small trivially copyable
// state inline (MPI request handles, or where a virtual receive must land) and two
// functions: wait, and abandon for a destructor that runs before wait. No allocation.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace shardwise {

/// A pending nonblocking operation. Move-only; wait() completes it. The destructor of a
/// request that was not waited for waits too, but swallows errors (call wait() to see
/// them); while an exception unwinds the stack it cancels what it can instead.
class Request {
 public:
  /// Bytes a backend may keep inline.
  static constexpr std::size_t state_size = 64;

  /// What a backend provides: both functions receive a pointer to its inline state.
  struct Ops {
    void (*wait)(void* state);             ///< Completes the operation; may throw.
    void (*abandon)(void* state) noexcept;  ///< Completes or cancels it for a destructor; never throws.
  };

  /// An empty request: already complete.
  Request() noexcept = default;

  /// Used by backends: `state` is copied inline.
  template <typename State>
  Request(const Ops* ops, const State& state) noexcept : ops_(ops) {
    static_assert(std::is_trivially_copyable_v<State> && sizeof(State) <= state_size &&
                      alignof(State) <= alignof(std::max_align_t),
                  "shardwise::Request: a backend's request state must be small and trivially copyable");
    ::new (static_cast<void*>(state_)) State(state);
  }

  /// Takes over `other`'s pending operation; `other` is then empty. Assignment first
  /// abandons the operation this request still holds (as the destructor would).
  ///@{
  Request(Request&& other) noexcept : ops_(std::exchange(other.ops_, nullptr)) {
    std::memcpy(state_, other.state_, state_size);
  }
  Request& operator=(Request&& other) noexcept {
    if (this != &other) {
      abandon();
      ops_ = std::exchange(other.ops_, nullptr);
      std::memcpy(state_, other.state_, state_size);
    }
    return *this;
  }
  ///@}
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  /// Waits for a pending operation, swallowing its errors; while an exception unwinds the
  /// stack, cancels what it can instead.
  ~Request() { abandon(); }

  /// Blocks until the operation is complete; afterwards the buffers may be reused.
  void wait() {
    if (const Ops* ops = std::exchange(ops_, nullptr)) ops->wait(state_);
  }

  /// True until wait() has been called (or the request was moved from).
  [[nodiscard]] bool pending() const noexcept { return ops_ != nullptr; }

 private:
  void abandon() noexcept {
    if (const Ops* ops = std::exchange(ops_, nullptr)) ops->abandon(state_);
  }

  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) std::byte state_[state_size]{};
};

}  // namespace shardwise
