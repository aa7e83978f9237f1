// shardwise/kernels/gemm.hpp: the one place where the kernels multiply.
//
// Every local GEMM of every schedule comes here with plain strided blocks, so Eigen's
// product is instantiated once per (scalar, storage orders), not once per expression
// type, and a BLAS has a single place to plug in.
//
// Built with SHARDWISE_USE_BLAS (Meson option `blas`, on when a BLAS is found), the
// kernels call cblas_dgemm / cblas_sgemm; set_gemm_backend() switches between that and
// Eigen's own kernel at run time (benchmarks measure both). Only the kernels' GEMMs
// change: the user's own Eigen code is untouched (for that, define EIGEN_USE_BLAS).
// Give each MPI rank one BLAS thread (OPENBLAS_NUM_THREADS=1, or OMP_NUM_THREADS=1 for
// BLIS): the ranks already use the cores.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>

#if defined(SHARDWISE_USE_BLAS) && SHARDWISE_USE_BLAS
// OpenBLAS's headers use C99 _Complex; when they are found through a plain -I (pkg-config)
// rather than as system headers, -Wpedantic would flag them in the user's build.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cblas.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#define SHARDWISE_HAS_BLAS 1
#else
#define SHARDWISE_HAS_BLAS 0
#endif

namespace shardwise {

/// Who multiplies the local blocks.
enum class GemmBackend {
  eigen,  ///< Eigen's own GEMM kernel
  blas,   ///< the BLAS shardwise was built against (cblas_?gemm)
};

/// Whether this build can use a BLAS.
inline constexpr bool has_blas_backend = SHARDWISE_HAS_BLAS != 0;

namespace detail {
inline std::atomic<GemmBackend>& gemm_backend_setting() {
  static std::atomic<GemmBackend> backend{has_blas_backend ? GemmBackend::blas : GemmBackend::eigen};
  return backend;
}
}  // namespace detail

/// The backend the kernels use now (BLAS by default when built with one).
inline GemmBackend gemm_backend() { return detail::gemm_backend_setting().load(std::memory_order_relaxed); }

/// Chooses the backend for all kernels; asking for BLAS in a build without one throws.
inline void set_gemm_backend(GemmBackend backend) {
  if (backend == GemmBackend::blas && !has_blas_backend)
    throw std::invalid_argument("shardwise::set_gemm_backend: this build has no BLAS (configure with -Dblas=enabled)");
  detail::gemm_backend_setting().store(backend, std::memory_order_relaxed);
}

namespace detail {

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

#if SHARDWISE_HAS_BLAS
/// C (order OC, leading dimension ldc) = A * B + beta C through CBLAS, in C's storage order.
template <typename Scalar, int OA, int OB, int OC>
void blas_gemm(Scalar* c, std::int64_t ldc, block_ref<Scalar, OA> a, block_ref<Scalar, OB> b, Scalar beta) {
  constexpr auto int_max = std::numeric_limits<int>::max();
  if (a.rows > int_max || b.cols > int_max || a.cols > int_max || a.stride > int_max || b.stride > int_max ||
      ldc > int_max)
    throw std::length_error("shardwise: a block is too large for a 32-bit BLAS");
  const auto layout = OC == Eigen::RowMajor ? CblasRowMajor : CblasColMajor;
  // A block stored in the other order is the transpose of one stored in C's order.
  const auto op_a = OA == OC ? CblasNoTrans : CblasTrans;
  const auto op_b = OB == OC ? CblasNoTrans : CblasTrans;
  const int m = static_cast<int>(a.rows), n = static_cast<int>(b.cols), k = static_cast<int>(a.cols);
  if constexpr (std::is_same_v<Scalar, double>)
    cblas_dgemm(layout, op_a, op_b, m, n, k, 1.0, a.data, static_cast<int>(a.stride), b.data,
                static_cast<int>(b.stride), beta, c, static_cast<int>(ldc));
  else
    cblas_sgemm(layout, op_a, op_b, m, n, k, 1.0f, a.data, static_cast<int>(a.stride), b.data,
                static_cast<int>(b.stride), beta, c, static_cast<int>(ldc));
}
#endif

/// The other storage order.
constexpr int flip_order(int order) { return order == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor; }

/// The same memory read in the other storage order: the transpose.
template <typename Scalar, int Order>
block_ref<Scalar, flip_order(Order)> transpose(block_ref<Scalar, Order> x) {
  return {x.data, x.cols, x.rows, x.stride};
}

/// The transpose of a whole rows x cols block stored in order O: the same data, read in the other order.
template <typename Scalar, int O>
block_ref<Scalar, flip_order(O)> transposed(const Scalar* data, std::int64_t rows, std::int64_t cols) {
  return block_ref<Scalar, flip_order(O)>::whole(data, cols, rows);
}

/// C = A * B, or C += A * B; C is an m x n block in order OC whose columns (column-major) or
/// rows (row-major) are `ldc` elements apart (0: contiguous).
///
/// Compile time: GEMM instantiations dominate the kernels' compile time, so every call ends in
/// one of at most four per scalar type (the orders of A and B; C column-major, += only). A
/// row-major C is the column-major C^T = B^T A^T, the same memory; C = A B is C := 0, then
/// C += A B, which is what Eigen itself does for products past its small-size path.
template <typename Scalar, int OA, int OB, int OC>
void gemm(Scalar* c, block_ref<Scalar, OA> a, block_ref<Scalar, OB> b, bool accumulate, std::int64_t ldc = 0) {
  if constexpr (OC == Eigen::RowMajor) {
    gemm<Scalar, flip_order(OB), flip_order(OA), Eigen::ColMajor>(c, transpose(b), transpose(a), accumulate, ldc);
  } else {
    const std::int64_t ld = ldc > 0 ? ldc : std::max<std::int64_t>(1, a.rows);
#if SHARDWISE_HAS_BLAS
    if (gemm_backend() == GemmBackend::blas) {
      blas_gemm<Scalar, OA, OB, OC>(c, ld, a, b, accumulate ? Scalar(1) : Scalar(0));
      return;
    }
#endif
    using matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
    Eigen::Map<matrix, Eigen::Unaligned, Eigen::OuterStride<>> cm(c, a.rows, b.cols, Eigen::OuterStride<>(ld));
    if (!accumulate) cm.setZero();
    cm.noalias() += a.map() * b.map();
  }
}

/// A matrix whose storage order is known only at run time: element (i, j) at
/// data[i * ld + j] (row-major) or data[i + j * ld] (column-major).
template <typename Scalar>
struct matrix_view {
  Scalar* data = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 1;
  bool row_major = false;

  [[nodiscard]] matrix_view middle_rows(std::int64_t first, std::int64_t count) const {
    return {data + (row_major ? first * ld : first), count, cols, ld, row_major};
  }
  [[nodiscard]] matrix_view middle_cols(std::int64_t first, std::int64_t count) const {
    return {data + (row_major ? first : first * ld), rows, count, ld, row_major};
  }
  template <int Order>
  [[nodiscard]] block_ref<std::remove_const_t<Scalar>, Order> as() const {
    return {data, rows, cols, ld};
  }
};

/// C = A * B (or +=) on matrices whose orders are run-time values: one of the compiled
/// instantiations above, chosen by the orders.
template <typename Scalar>
void gemm(matrix_view<Scalar> c, matrix_view<const Scalar> a, matrix_view<const Scalar> b, bool accumulate) {
  constexpr int row = Eigen::RowMajor, col = Eigen::ColMajor;
  const int key = (a.row_major ? 4 : 0) + (b.row_major ? 2 : 0) + (c.row_major ? 1 : 0);
  switch (key) {
    case 0: return gemm<Scalar, col, col, col>(c.data, a.template as<col>(), b.template as<col>(), accumulate, c.ld);
    case 1: return gemm<Scalar, col, col, row>(c.data, a.template as<col>(), b.template as<col>(), accumulate, c.ld);
    case 2: return gemm<Scalar, col, row, col>(c.data, a.template as<col>(), b.template as<row>(), accumulate, c.ld);
    case 3: return gemm<Scalar, col, row, row>(c.data, a.template as<col>(), b.template as<row>(), accumulate, c.ld);
    case 4: return gemm<Scalar, row, col, col>(c.data, a.template as<row>(), b.template as<col>(), accumulate, c.ld);
    case 5: return gemm<Scalar, row, col, row>(c.data, a.template as<row>(), b.template as<col>(), accumulate, c.ld);
    case 6: return gemm<Scalar, row, row, col>(c.data, a.template as<row>(), b.template as<row>(), accumulate, c.ld);
    default: return gemm<Scalar, row, row, row>(c.data, a.template as<row>(), b.template as<row>(), accumulate, c.ld);
  }
}

}  // namespace detail
}  // namespace shardwise
