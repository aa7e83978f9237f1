// shardwise/detail/partition.hpp: how a dimension is cut into shards.
//
// Part i of n items over p parts starts at floor(i * n / p). Sizes differ by at
// most one, and the cut nests: splitting over (x, y) and gathering y back gives
// exactly the blocks of a split over x alone (the start of part ix * Ey is
// floor(ix * n / Ex)). Gathers and reduce-scatters over minor axes therefore
// never need to move data between x-blocks.
//
// The other convention, the first n mod p parts one larger (PETSc's, and what most MPI codes
// write by hand), is SplitFirstLarger's: first_larger_begin below. It does not nest, so the
// planner never plans with it; such an array reaches the planner's blocks by a redistribution.
#pragma once

#include <cstdint>

namespace shardwise::detail {

[[nodiscard]] constexpr std::int64_t block_begin(std::int64_t n, std::int64_t parts,
                                                 std::int64_t index) {
  return (index * n) / parts;
}

[[nodiscard]] constexpr std::int64_t block_size(std::int64_t n, std::int64_t parts,
                                                std::int64_t index) {
  return block_begin(n, parts, index + 1) - block_begin(n, parts, index);
}

/// Part i of n items over p parts with the first n mod p parts one larger: it starts at
/// i * floor(n / p) + min(i, n mod p) (10 over 4: 3, 3, 2, 2).
[[nodiscard]] constexpr std::int64_t first_larger_begin(std::int64_t n, std::int64_t parts, std::int64_t index) {
  const std::int64_t extra = n % parts;
  return index * (n / parts) + (index < extra ? index : extra);
}

[[nodiscard]] constexpr std::int64_t first_larger_size(std::int64_t n, std::int64_t parts, std::int64_t index) {
  return n / parts + (index < n % parts ? 1 : 0);
}

}  // namespace shardwise::detail
