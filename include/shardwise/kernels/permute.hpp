// shardwise/kernels/permute.hpp: a tensor block copied into another storage order.
//
// The one local data movement of the kernels besides the GEMMs: packing a block for a
// collective or a GEMM, and unpacking a result into the order its owner stores it in.
// Dimensions that stay next to each other in both orders are merged and dimensions of
// extent 1 dropped first, so most packs end as one contiguous copy or one 2-D transpose
// (copied in cache-sized tiles); what is left loops over the outer dimensions. Plain loops,
// not Eigen expressions: every translation unit compiles these, and loops are cheap to
// compile and vectorize as well. Not inlined: each is compiled once per scalar, not once per
// caller, and a call is nothing next to the copy it makes.
#pragma once

#include <algorithm>
#include <array>
#include <complex>
#include <cstdint>
#include <cstring>

#include "shardwise/detail/separate_compilation.hpp"
#include "shardwise/layout.hpp"

#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
#include "shardwise/detail/simulation.hpp"  // SMPI: a run that computes nothing moves no data either
#endif

namespace shardwise::detail {

/// Whether the copies and sums below do nothing: only on a simulated cluster whose run computes
/// nothing (detail/simulation.hpp); a constant false in every other build.
inline bool simulation_skips_data() {
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
  return simulation::skip_local_data();
#else
  return false;
#endif
}

/// to (rows x cols, row-major, contiguous) = the matrix whose element (i, j) is
/// from[i * row_stride + j * col_stride].
template <typename Scalar>
[[gnu::noinline]] void copy_strided(const Scalar* from, std::int64_t row_stride, std::int64_t col_stride, Scalar* to, std::int64_t rows,
                  std::int64_t cols) {
  if (rows <= 0 || cols <= 0) return;  // an empty block may have no storage at all (null)
  if (simulation_skips_data()) return;
  if (col_stride == 1) {
    for (std::int64_t i = 0; i < rows; ++i)
      std::memcpy(to + i * cols, from + i * row_stride, static_cast<std::size_t>(cols) * sizeof(Scalar));
    return;
  }
  // A transpose: tiles small enough that the strided reads stay in cache.
  constexpr std::int64_t tile = 32;
  for (std::int64_t i0 = 0; i0 < rows; i0 += tile)
    for (std::int64_t j0 = 0; j0 < cols; j0 += tile) {
      const std::int64_t i1 = std::min(rows, i0 + tile), j1 = std::min(cols, j0 + tile);
      for (std::int64_t i = i0; i < i1; ++i)
        for (std::int64_t j = j0; j < j1; ++j) to[i * cols + j] = from[i * row_stride + j * col_stride];
    }
}

/// into[i] += from[i] for n elements.
template <typename Scalar>
[[gnu::noinline]] void add_into(Scalar* into, const Scalar* from, std::int64_t n) {
  if (simulation_skips_data()) return;
  for (std::int64_t i = 0; i < n; ++i) into[i] += from[i];
}

/// into[i] = alpha * from[i] + beta * into[i] for n elements (BLAS's C = alpha * AB + beta * C on
/// a finished product). With beta zero `into` is not read, so a NaN there does not propagate.
template <typename Scalar>
[[gnu::noinline]] void scale_add_into(Scalar* into, const Scalar* from, std::int64_t n, Scalar alpha, Scalar beta) {
  if (simulation_skips_data()) return;
  if (beta == Scalar(0))
    for (std::int64_t i = 0; i < n; ++i) into[i] = alpha * from[i];
  else
    for (std::int64_t i = 0; i < n; ++i) into[i] = alpha * from[i] + beta * into[i];
}

/// Copies a block of `extents` whose elements lie at `source_strides` from `from` (any
/// strides: a view's leading dimension, a transposed view) into contiguous storage in
/// `to_order` at `to`.
template <typename Scalar>
[[gnu::noinline]] void permute_copy_strided(const Scalar* from, const tensor_extents& source_strides, Scalar* to,
                                            const dim_order& to_order, const tensor_extents& extents) {
  const std::int64_t total = element_count(extents, to_order.rank);
  if (total == 0 || simulation_skips_data()) return;
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
  // The two innermost destination dimensions form a matrix; loop over the rest.
  const std::int64_t rows = extent[static_cast<std::size_t>(n - 2)], cols = extent[static_cast<std::size_t>(n - 1)];
  const std::int64_t row_stride = stride[static_cast<std::size_t>(n - 2)], col_stride = stride[static_cast<std::size_t>(n - 1)];
  const std::int64_t outer = total / (rows * cols);
  std::array<std::int64_t, max_tensor_rank> index{};
  for (std::int64_t block = 0; block < outer; ++block) {
    std::int64_t offset = 0;
    for (int k = 0; k < n - 2; ++k) offset += index[static_cast<std::size_t>(k)] * stride[static_cast<std::size_t>(k)];
    copy_strided(from + offset, row_stride, col_stride, to + block * rows * cols, rows, cols);
    for (int k = n - 3; k >= 0; --k) {  // next outer index, last one fastest
      if (++index[static_cast<std::size_t>(k)] < extent[static_cast<std::size_t>(k)]) break;
      index[static_cast<std::size_t>(k)] = 0;
    }
  }
}

/// Copies a block of `extents` stored in `from_order` at `from` into `to_order` at `to`.
template <typename Scalar>
[[gnu::noinline]] void permute_copy(const Scalar* from, const dim_order& from_order, Scalar* to, const dim_order& to_order,
                  const tensor_extents& extents) {
  if (from == to) return;
  permute_copy_strided(from, strides_of(extents, from_order), to, to_order, extents);
}

/// Copies the part [offset, offset + to_extents[dim]) along `dim` of a block of `from_extents`
/// stored in `order` into a contiguous block of `to_extents` in the same order: a slice. The
/// dimensions stored outside `dim` are the rows of a matrix, those inside it one contiguous run.
template <typename Scalar>
void copy_slice(const Scalar* from, const tensor_extents& from_extents, const dim_order& order, int dim,
                std::int64_t offset, Scalar* to, const tensor_extents& to_extents) {
  std::int64_t outer = 1, inner = 1;
  const int at = order.position(dim);
  for (int i = 0; i < order.rank; ++i) {
    const std::int64_t e = to_extents[static_cast<std::size_t>(order[i])];
    if (i < at) outer *= e;
    if (i > at) inner *= e;
  }
  const std::int64_t from_run = from_extents[static_cast<std::size_t>(dim)] * inner;
  const std::int64_t to_run = to_extents[static_cast<std::size_t>(dim)] * inner;
  copy_strided(from + offset * inner, from_run, 1, to, outer, to_run);
}

/// Copies the box of `box` extents at `offsets` out of (`out_of` true) or into a row-major
/// tensor of `whole` extents at `tensor`, from or to a row-major block at `block`: how a rank
/// takes its block out of a global tensor. One memcpy per innermost run.
template <typename Scalar>
void copy_box(const Scalar* from, Scalar* to, const tensor_extents& whole, const tensor_extents& offsets,
              const tensor_extents& box, int rank, bool out_of) {
  if (element_count(box, rank) == 0) return;
  if (rank == 0) {  // a scalar
    *to = *from;
    return;
  }
  const tensor_extents strides = strides_of(whole, dim_order::row_major(rank));
  const std::int64_t run = box[static_cast<std::size_t>(rank - 1)];
  const std::int64_t runs = element_count(box, rank) / run;
  tensor_extents index{};
  for (std::int64_t r = 0; r < runs; ++r) {
    std::int64_t at = offsets[static_cast<std::size_t>(rank - 1)];
    for (int d = 0; d + 1 < rank; ++d)
      at += (offsets[static_cast<std::size_t>(d)] + index[static_cast<std::size_t>(d)]) * strides[static_cast<std::size_t>(d)];
    if (out_of) std::memcpy(to + r * run, from + at, static_cast<std::size_t>(run) * sizeof(Scalar));
    else std::memcpy(to + at, from + r * run, static_cast<std::size_t>(run) * sizeof(Scalar));
    for (int d = rank - 2; d >= 0; --d) {  // the next run, the last outer index fastest
      if (++index[static_cast<std::size_t>(d)] < box[static_cast<std::size_t>(d)]) break;
      index[static_cast<std::size_t>(d)] = 0;
    }
  }
}

/// The instantiations shardwise/compiled_runtime.hpp compiles once (EXTERN empty) and the other
/// translation units then only declare (EXTERN `extern`) under SHARDWISE_SEPARATE_COMPILATION.
#define SHARDWISE_PERMUTE_INSTANTIATIONS(EXTERN, Scalar)                                                       \
  EXTERN template void copy_strided<Scalar>(const Scalar*, std::int64_t, std::int64_t, Scalar*, std::int64_t, \
                                            std::int64_t);                                                   \
  EXTERN template void add_into<Scalar>(Scalar*, const Scalar*, std::int64_t);                                \
  EXTERN template void scale_add_into<Scalar>(Scalar*, const Scalar*, std::int64_t, Scalar, Scalar);          \
  EXTERN template void permute_copy<Scalar>(const Scalar*, const dim_order&, Scalar*, const dim_order&,        \
                                            const tensor_extents&);                                          \
  EXTERN template void permute_copy_strided<Scalar>(const Scalar*, const tensor_extents&, Scalar*,             \
                                                    const dim_order&, const tensor_extents&);
#if SHARDWISE_EXTERN_RUNTIME
SHARDWISE_PERMUTE_INSTANTIATIONS(extern, float)
SHARDWISE_PERMUTE_INSTANTIATIONS(extern, double)
SHARDWISE_PERMUTE_INSTANTIATIONS(extern, std::complex<float>)
SHARDWISE_PERMUTE_INSTANTIATIONS(extern, std::complex<double>)
#endif

}  // namespace shardwise::detail
