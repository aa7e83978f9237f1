// shardwise/detail/static_vector.hpp: a constexpr vector with a fixed capacity.
//
// Axis lists and schedules are computed by constexpr functions and kept as
// static data; std::vector cannot leave a constant evaluation, this can.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <stdexcept>

namespace shardwise::detail {

/// Thrown out of line: every push_back would otherwise carry its own throw.
[[noreturn, gnu::cold, gnu::noinline]] inline void static_vector_overflow() {
  throw std::length_error("shardwise: static_vector capacity exceeded");
}

template <typename T, std::size_t Capacity>
class static_vector {
 public:
  using value_type = T;

  constexpr static_vector() = default;
  constexpr static_vector(std::initializer_list<T> init) {
    for (const T& value : init) push_back(value);
  }

  constexpr void push_back(const T& value) {
    // Reached in a constant evaluation, the call is a compile error, which is what we want.
    if (count_ == Capacity) static_vector_overflow();
    items_[count_++] = value;
  }
  constexpr void pop_back() { --count_; }
  constexpr void clear() { count_ = 0; }

  [[nodiscard]] constexpr std::size_t size() const { return count_; }
  [[nodiscard]] constexpr bool empty() const { return count_ == 0; }
  [[nodiscard]] static constexpr std::size_t capacity() { return Capacity; }

  constexpr T& operator[](std::size_t i) { return items_[i]; }
  constexpr const T& operator[](std::size_t i) const { return items_[i]; }
  constexpr T& back() { return items_[count_ - 1]; }
  constexpr const T& back() const { return items_[count_ - 1]; }

  constexpr T* begin() { return items_; }
  constexpr T* end() { return items_ + count_; }
  constexpr const T* begin() const { return items_; }
  constexpr const T* end() const { return items_ + count_; }

  friend constexpr bool operator==(const static_vector& a, const static_vector& b) {
    if (a.count_ != b.count_) return false;
    for (std::size_t i = 0; i < a.count_; ++i)
      if (!(a.items_[i] == b.items_[i])) return false;
    return true;
  }

 private:
  T items_[Capacity]{};
  // The smallest count type that holds Capacity: plans are made of these vectors.
  std::conditional_t<(Capacity < 256), std::uint8_t, std::size_t> count_ = 0;
};

}  // namespace shardwise::detail
