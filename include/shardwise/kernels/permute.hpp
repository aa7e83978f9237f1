// shardwise/kernels/permute.hpp: a tensor block copied into another storage order.
//
// The one local data movement of the kernels besides the GEMMs: packing a block for a
// collective or a GEMM, and unpacking a result into the order its owner stores it in.
// Dimensions that stay next to each other in both orders are merged and dimensions of
// extent 1 dropped first, so most packs end as one contiguous copy or one 2-D transpose
// (an Eigen assignment); what is left loops over the outer dimensions.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <cstring>

#include "shardwise/layout.hpp"

namespace shardwise::detail {

/// Copies a block of `extents` stored in `from_order` at `from` into `to_order` at `to`.
template <typename Scalar>
void permute_copy(const Scalar* from, const dim_order& from_order, Scalar* to, const dim_order& to_order,
                  const tensor_extents& extents) {
  const std::int64_t total = element_count(extents, to_order.rank);
  if (total == 0 || from == to) return;
  const tensor_extents source_strides = strides_of(extents, from_order);
  // The destination's dimensions, outermost first, with their source strides; merged where the
  // source has them adjacent in the same order too, extent-1 dimensions dropped.
  std::array<std::int64_t, max_tensor_rank> extent{}, stride{};
  int n = 0;
  for (int i = 0; i < to_order.rank; ++i) {
    const auto d = static_cast<std::size_t>(to_order[i]);
    if (extents[d] == 1) continue;
    if (n > 0 && stride[static_cast<std::size_t>(n - 1)] == source_strides[d] * extents[d]) {
      extent[static_cast<std::size_t>(n - 1)] *= extents[d];
      stride[static_cast<std::size_t>(n - 1)] = source_strides[d];
    } else {
      extent[static_cast<std::size_t>(n)] = extents[d];
      stride[static_cast<std::size_t>(n)] = source_strides[d];
      ++n;
    }
  }
  if (n == 0 || (n == 1 && stride[0] == 1)) {
    std::memcpy(to, from, static_cast<std::size_t>(total) * sizeof(Scalar));
    return;
  }
  if (n == 1) {  // a strided vector
    for (std::int64_t i = 0; i < extent[0]; ++i) to[i] = from[i * stride[0]];
    return;
  }
  // The two innermost destination dimensions form a matrix copied by Eigen; loop over the rest.
  using matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using source_map = Eigen::Map<const matrix, Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
  const std::int64_t rows = extent[static_cast<std::size_t>(n - 2)], cols = extent[static_cast<std::size_t>(n - 1)];
  const std::int64_t row_stride = stride[static_cast<std::size_t>(n - 2)], col_stride = stride[static_cast<std::size_t>(n - 1)];
  const std::int64_t outer = total / (rows * cols);
  std::array<std::int64_t, max_tensor_rank> index{};
  for (std::int64_t block = 0; block < outer; ++block) {
    std::int64_t offset = 0;
    for (int k = 0; k < n - 2; ++k) offset += index[static_cast<std::size_t>(k)] * stride[static_cast<std::size_t>(k)];
    Eigen::Map<matrix>(to + block * rows * cols, rows, cols) =
        source_map(from + offset, rows, cols, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(row_stride, col_stride));
    for (int k = n - 3; k >= 0; --k) {  // next outer index, last one fastest
      if (++index[static_cast<std::size_t>(k)] < extent[static_cast<std::size_t>(k)]) break;
      index[static_cast<std::size_t>(k)] = 0;
    }
  }
}

}  // namespace shardwise::detail
