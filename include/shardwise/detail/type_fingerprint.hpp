// shardwise/detail/type_fingerprint.hpp: a number that tells apart the types a call was
// instantiated with.
//
// The ranks of an SPMD program run one call each; a rank that calls it with other types (C
// with another sharding on one rank only) would run another plan, and the ranks' messages
// would no longer match. The cross-rank agreement compares this number with the shapes, so
// such a divergence is the same error on every rank instead of a hang. Every rank runs the
// same program, so the compiler's spelling of the types is the same on each.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardwise::detail {

template <typename... T>
constexpr std::int64_t fingerprint_of_types() {
  const std::string_view name = __PRETTY_FUNCTION__;  // names T...
  std::uint64_t hash = 14695981039346656037ull;        // FNV-1a
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return static_cast<std::int64_t>(hash >> 2);  // non-negative: the agreement negates its values
}

/// The fingerprint of the types T..., a compile-time constant.
template <typename... T>
inline constexpr std::int64_t type_fingerprint = fingerprint_of_types<T...>();

}  // namespace shardwise::detail
