// shardwise/detail/gemm.hpp: the one place where the kernels multiply.
//
// Every local GEMM of every schedule comes here with plain strided blocks, so Eigen's
// product is instantiated once per (scalar, storage orders), not once per expression
// type, and the BLAS backend has a single place to plug in.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

namespace shardwise::detail {

/// A read-only dense block: first element, extents, and the distance between
/// consecutive columns (column-major) or rows (row-major).
template <typename Scalar, int Order>
struct block_ref {
  const Scalar* data = nullptr;
  std::int64_t rows = 0, cols = 0, stride = 1;

  /// A whole contiguous rows x cols block.
  static block_ref whole(const Scalar* data, std::int64_t rows, std::int64_t cols) {
    return {data, rows, cols, std::max<std::int64_t>(1, Order == Eigen::ColMajor ? rows : cols)};
  }
  [[nodiscard]] block_ref middle_cols(std::int64_t first, std::int64_t count) const {
    return {data + (Order == Eigen::ColMajor ? first * stride : first), rows, count, stride};
  }
  [[nodiscard]] block_ref middle_rows(std::int64_t first, std::int64_t count) const {
    return {data + (Order == Eigen::ColMajor ? first : first * stride), count, cols, stride};
  }
  [[nodiscard]] auto map() const {
    using matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Order>;
    return Eigen::Map<const matrix, Eigen::Unaligned, Eigen::OuterStride<>>(data, rows, cols, Eigen::OuterStride<>(stride));
  }
};

/// C = A * B, or C += A * B; C is a contiguous m x n block in order OC.
template <typename Scalar, int OA, int OB, int OC>
void gemm(Scalar* c, block_ref<Scalar, OA> a, block_ref<Scalar, OB> b, bool accumulate) {
  Eigen::Map<Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, OC>> cm(c, a.rows, b.cols);
  if (accumulate) cm.noalias() += a.map() * b.map();
  else cm.noalias() = a.map() * b.map();
}

}  // namespace shardwise::detail
