// shardwise/detail/partition.hpp: how a dimension is cut into shards.
//
// Part i of n items over p parts starts at floor(i * n / p). Sizes differ by at
// most one, and the cut nests: splitting over (x, y) and gathering y back gives
// exactly the blocks of a split over x alone (the start of part ix * Ey is
// floor(ix * n / Ex)). Gathers and reduce-scatters over minor axes therefore
// never need to move data between x-blocks.
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

}  // namespace shardwise::detail
