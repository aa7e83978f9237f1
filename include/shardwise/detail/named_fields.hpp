// shardwise/detail/named_fields.hpp: shapes whose extents must be written by name.
//
// A shape of three or four integers in a fixed order is easy to misorder ({m, n, k} where the
// struct is {m, k, n}), and the mistake compiles and gives wrong figures. A shape struct makes
// its first member a `named_fields_only` that nothing converts to: a positional initializer
// then lands its first value there and fails with the message below, while designated
// initializers ({.m = ..., .k = ..., .n = ...}; C++20 also refuses them out of order) skip it.
#pragma once

namespace shardwise::detail {

template <typename T>
inline constexpr bool named_fields_violation = false;

/// The first member of a shape struct: empty, default-constructible, and a compile error to
/// initialize from any value.
struct named_fields_only {
  named_fields_only() = default;
  template <typename T>
  constexpr named_fields_only(const T&) {  // NOLINT(google-explicit-constructor): it exists to fail
    static_assert(named_fields_violation<T>,
                  "shardwise: write a shape's extents by name, as designated initializers in the struct's order: "
                  "sw::MatmulShape{.m = rows of A, .k = the contracted extent, .n = columns of B} or "
                  "sw::FfnShape{.b = batch, .s = sequence, .m = model, .h = hidden}; a shape in positional order is "
                  "refused because a misordered one would compile too");
  }
  friend constexpr bool operator==(named_fields_only, named_fields_only) noexcept { return true; }
};

}  // namespace shardwise::detail
