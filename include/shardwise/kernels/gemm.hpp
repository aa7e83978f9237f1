// shardwise/kernels/gemm.hpp: the one place where the kernels multiply.
//
// Every local GEMM of every schedule comes here with plain strided blocks, so Eigen's
// product is instantiated once per (scalar, storage orders), not once per expression
// type, and a BLAS has a single place to plug in.
//
// Built with SHARDWISE_USE_BLAS (Meson option `blas`, on when a BLAS is found), the
// kernels call cblas_dgemm / cblas_sgemm; without it, Eigen's own GEMM kernel. Eigen's
// kernel is the larger part of what a translation unit pays to compile the kernels, so a
// BLAS build leaves it out unless SHARDWISE_EIGEN_GEMM=1 asks for both; set_gemm_backend()
// then switches between them at run time (the benchmarks measure both). Only the kernels'
// GEMMs change: the user's own Eigen code is untouched (for that, define EIGEN_USE_BLAS).
// Give each MPI rank one BLAS thread (OPENBLAS_NUM_THREADS=1, or OMP_NUM_THREADS=1 for
// BLIS): the ranks already use the cores.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
#include "shardwise/detail/simulation.hpp"  // SMPI: GEMMs charge their flops to the simulated host
#endif

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
/// 1 when the kernels can call a BLAS (built with SHARDWISE_USE_BLAS), else 0.
#define SHARDWISE_HAS_BLAS 1
#else
/// 0: built without SHARDWISE_USE_BLAS, so the kernels have no BLAS.
#define SHARDWISE_HAS_BLAS 0
#endif

// Whether the kernels compile Eigen's GEMM kernel too: always without a BLAS; with one, only
// when asked (see the top of this file).
#if !defined(SHARDWISE_EIGEN_GEMM)
/// Nonzero when the kernels compile Eigen's GEMM kernel: by default only without a BLAS;
/// SHARDWISE_EIGEN_GEMM=1 with a BLAS compiles both.
#define SHARDWISE_EIGEN_GEMM (!SHARDWISE_HAS_BLAS)
#endif
#if !SHARDWISE_HAS_BLAS && !SHARDWISE_EIGEN_GEMM
#error "shardwise: SHARDWISE_EIGEN_GEMM=0 needs a BLAS (SHARDWISE_USE_BLAS=1): the kernels would have no GEMM"
#endif

namespace shardwise {

/// Who multiplies the local blocks.
enum class GemmBackend {
  eigen,  ///< Eigen's own GEMM kernel
  blas,   ///< the BLAS shardwise was built against (cblas_?gemm)
};

/// Whether this build can use a BLAS.
inline constexpr bool has_blas_backend = SHARDWISE_HAS_BLAS != 0;
/// Whether this build compiles Eigen's GEMM kernel for the kernels (see SHARDWISE_EIGEN_GEMM).
inline constexpr bool has_eigen_backend = SHARDWISE_EIGEN_GEMM != 0;

namespace detail {
inline std::atomic<GemmBackend>& gemm_backend_setting() {
  static std::atomic<GemmBackend> backend{has_blas_backend ? GemmBackend::blas : GemmBackend::eigen};
  return backend;
}
}  // namespace detail

/// The backend the kernels use now (BLAS by default when built with one).
inline GemmBackend gemm_backend() { return detail::gemm_backend_setting().load(std::memory_order_relaxed); }

/// Chooses the backend for all kernels; asking for one the build does not have throws.
inline void set_gemm_backend(GemmBackend backend) {
  if (backend == GemmBackend::blas && !has_blas_backend)
    throw std::invalid_argument("shardwise::set_gemm_backend: this build has no BLAS (configure with -Dblas=enabled)");
  if (backend == GemmBackend::eigen && !has_eigen_backend)
    throw std::invalid_argument("shardwise::set_gemm_backend: this build multiplies with its BLAS only; define "
                                "SHARDWISE_EIGEN_GEMM=1 to compile Eigen's kernel too");
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
  /// The same memory read in the other order.
  [[nodiscard]] matrix_view transposed() const { return {data, cols, rows, ld, !row_major}; }
  template <int Order>
  [[nodiscard]] block_ref<std::remove_const_t<Scalar>, Order> as() const {
    return {data, rows, cols, ld};
  }
};

#if SHARDWISE_HAS_BLAS
/// x for a complex GEMV, safe to read one stride past its end. OpenBLAS 0.3.21's cgemv and
/// zgemv (Debian 12's; the Haswell kernels) read the element one stride after x's last, for
/// many shapes (6 x n, 2 x 1 with a stride, ...): harmless while that element is on the page of
/// x's last one, a crash when the next page is unmapped. x ending that close to a page (one
/// call in hundreds, for short vectors) is copied, with room, into this thread's buffer.
template <typename Scalar>
const Scalar* gemv_x_within_page(const Scalar* x, int length, int& inc) {
  constexpr std::uintptr_t page = 4096;  // the smallest page: within one, within any larger
  const std::uintptr_t last = reinterpret_cast<std::uintptr_t>(x) +
                              static_cast<std::uintptr_t>(length - 1) * static_cast<std::uintptr_t>(inc) * sizeof(Scalar);
  const std::uintptr_t reach = last + (2 * static_cast<std::uintptr_t>(inc) + 1) * sizeof(Scalar) - 1;  // two strides on
  if (last / page == reach / page) return x;
  thread_local std::vector<Scalar> copy;
  copy.resize(static_cast<std::size_t>(length) + 2);
  for (int i = 0; i < length; ++i) copy[static_cast<std::size_t>(i)] = x[static_cast<std::ptrdiff_t>(i) * inc];
  inc = 1;
  return copy.data();
}

/// y = op(M) x + beta y through CBLAS: M is rows x cols with leading dimension ld.
template <typename Scalar>
void blas_gemv(decltype(CblasRowMajor) layout, decltype(CblasNoTrans) op, int rows, int cols, const Scalar* m,
               int ld, const Scalar* x, int incx, Scalar beta, Scalar* y, int incy) {
  if constexpr (std::is_same_v<Scalar, std::complex<float>> || std::is_same_v<Scalar, std::complex<double>>) {
    x = gemv_x_within_page(x, op == CblasNoTrans ? cols : rows, incx);  // x has op(M)'s columns
  }
  const Scalar one(1);
  if constexpr (std::is_same_v<Scalar, double>) cblas_dgemv(layout, op, rows, cols, one, m, ld, x, incx, beta, y, incy);
  else if constexpr (std::is_same_v<Scalar, float>) cblas_sgemv(layout, op, rows, cols, one, m, ld, x, incx, beta, y, incy);
  else if constexpr (std::is_same_v<Scalar, std::complex<double>>)
    cblas_zgemv(layout, op, rows, cols, &one, m, ld, x, incx, &beta, y, incy);
  else cblas_cgemv(layout, op, rows, cols, &one, m, ld, x, incx, &beta, y, incy);
}

/// C = A * B + beta C through CBLAS, which takes the storage orders as run-time values.
template <typename Scalar>
void blas_gemm(matrix_view<Scalar> c, matrix_view<const Scalar> a, matrix_view<const Scalar> b, Scalar beta) {
  constexpr auto int_max = std::numeric_limits<int>::max();
  if (a.rows > int_max || b.cols > int_max || a.cols > int_max || a.ld > int_max || b.ld > int_max || c.ld > int_max)
    throw std::length_error("shardwise: a block is too large for a 32-bit BLAS");
  // A product with one column (or one row) is a matrix-vector product: GEMV reads the matrix
  // once where GEMM would first pack a copy of it (a solver's matvec is all matrix reads).
  if (b.cols == 1 && a.rows > 1 && a.cols > 0) {  // c = A b
    return blas_gemv<Scalar>(a.row_major ? CblasRowMajor : CblasColMajor, CblasNoTrans, static_cast<int>(a.rows),
                             static_cast<int>(a.cols), a.data, static_cast<int>(a.ld), b.data,
                             b.row_major ? static_cast<int>(b.ld) : 1, beta, c.data,
                             c.row_major ? static_cast<int>(c.ld) : 1);
  }
  if (a.rows == 1 && b.cols > 1 && a.cols > 0) {  // c^T = B^T a^T
    return blas_gemv<Scalar>(b.row_major ? CblasRowMajor : CblasColMajor, CblasTrans, static_cast<int>(b.rows),
                             static_cast<int>(b.cols), b.data, static_cast<int>(b.ld), a.data,
                             a.row_major ? 1 : static_cast<int>(a.ld), beta, c.data,
                             c.row_major ? 1 : static_cast<int>(c.ld));
  }
  const auto layout = c.row_major ? CblasRowMajor : CblasColMajor;
  // A block stored in the other order is the transpose of one stored in C's order.
  const auto op_a = a.row_major == c.row_major ? CblasNoTrans : CblasTrans;
  const auto op_b = b.row_major == c.row_major ? CblasNoTrans : CblasTrans;
  const int m = static_cast<int>(a.rows), n = static_cast<int>(b.cols), k = static_cast<int>(a.cols);
  const int lda = static_cast<int>(a.ld), ldb = static_cast<int>(b.ld), ldc = static_cast<int>(c.ld);
  const Scalar one(1);
  if constexpr (std::is_same_v<Scalar, double>)
    cblas_dgemm(layout, op_a, op_b, m, n, k, one, a.data, lda, b.data, ldb, beta, c.data, ldc);
  else if constexpr (std::is_same_v<Scalar, float>)
    cblas_sgemm(layout, op_a, op_b, m, n, k, one, a.data, lda, b.data, ldb, beta, c.data, ldc);
  // Complex: a plain transpose (CblasTrans, not ConjTrans) for the other storage order, as above.
  else if constexpr (std::is_same_v<Scalar, std::complex<double>>)
    cblas_zgemm(layout, op_a, op_b, m, n, k, &one, a.data, lda, b.data, ldb, &beta, c.data, ldc);
  else
    cblas_cgemm(layout, op_a, op_b, m, n, k, &one, a.data, lda, b.data, ldb, &beta, c.data, ldc);
}
#endif

#if SHARDWISE_EIGEN_GEMM
/// C (column-major) += A * B with Eigen's kernel: at most four instantiations per scalar type,
/// for the orders of A and B (a row-major C is the column-major C^T = B^T A^T, the same memory).
template <typename Scalar, int OA, int OB>
void eigen_gemm(matrix_view<Scalar> c, matrix_view<const Scalar> a, matrix_view<const Scalar> b) {
  using matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  Eigen::Map<matrix, Eigen::Unaligned, Eigen::OuterStride<>> cm(c.data, c.rows, c.cols, Eigen::OuterStride<>(c.ld));
  cm.noalias() += a.template as<OA>().map() * b.template as<OB>().map();
}
#endif

/// C = A * B, or C += A * B, on matrices whose storage orders are run-time values.
template <typename Scalar>
void gemm(matrix_view<Scalar> c, matrix_view<const Scalar> a, matrix_view<const Scalar> b, bool accumulate) {
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
  // 2mnk real flops; a complex multiply-add is 4 real multiplications and 4 additions.
  constexpr double flops_per_multiply_add = std::is_floating_point_v<Scalar> ? 2.0 : 8.0;
  if (simulation::charge().load(std::memory_order_relaxed))
    simulation::charge_flops(flops_per_multiply_add * static_cast<double>(a.rows) * static_cast<double>(b.cols) *
                             static_cast<double>(a.cols));
  if (!simulation::compute().load(std::memory_order_relaxed)) return;
#endif
#if SHARDWISE_HAS_BLAS
  if (!has_eigen_backend || gemm_backend() == GemmBackend::blas) return blas_gemm(c, a, b, accumulate ? Scalar(1) : Scalar(0));
#endif
#if SHARDWISE_EIGEN_GEMM
  if (c.row_major) {  // C^T = B^T A^T, column-major
    const matrix_view<const Scalar> a_t = b.transposed(), b_t = a.transposed();
    a = a_t;
    b = b_t;
    c = c.transposed();
  }
  // C = A B is C := 0, then C += A B, which is what Eigen itself does past its small-size path.
  if (!accumulate)
    for (std::int64_t j = 0; j < c.cols; ++j) std::fill_n(c.data + j * c.ld, c.rows, Scalar(0));
  constexpr int row = Eigen::RowMajor, col = Eigen::ColMajor;
  if (a.row_major) {
    if (b.row_major) eigen_gemm<Scalar, row, row>(c, a, b);
    else eigen_gemm<Scalar, row, col>(c, a, b);
  } else {
    if (b.row_major) eigen_gemm<Scalar, col, row>(c, a, b);
    else eigen_gemm<Scalar, col, col>(c, a, b);
  }
#endif
}

/// The same for blocks whose orders are compile-time values; C is contiguous in order OC
/// unless `ldc` says how far apart its columns (column-major) or rows (row-major) are.
template <typename Scalar, int OA, int OB, int OC>
void gemm(Scalar* c, block_ref<Scalar, OA> a, block_ref<Scalar, OB> b, bool accumulate, std::int64_t ldc = 0) {
  constexpr bool row = OC == Eigen::RowMajor;
  const std::int64_t ld = ldc > 0 ? ldc : std::max<std::int64_t>(1, row ? b.cols : a.rows);
  gemm<Scalar>(matrix_view<Scalar>{c, a.rows, b.cols, ld, row},
               matrix_view<const Scalar>{a.data, a.rows, a.cols, a.stride, OA == Eigen::RowMajor},
               matrix_view<const Scalar>{b.data, b.rows, b.cols, b.stride, OB == Eigen::RowMajor}, accumulate);
}

}  // namespace detail
}  // namespace shardwise
