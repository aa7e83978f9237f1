// shardwise/scalapack/block_cyclic_matrix.hpp: a matrix in ScaLAPACK's layout, held by C++.
//
//   sc::BlockCyclicMatrix<double> a(context, n, n, 64, 64);      // allocates this rank's part
//   a.fill([](std::int64_t i, std::int64_t j) { return i == j ? 4.0 : 1.0 / (1 + i + j); });
//   pdgesv_(&n, &nrhs, a.data(), &one, &one, a.descriptor(), ...);  // ScaLAPACK works in place
//   sc::gemm('N', 'N', 1.0, a, x, 0.0, c);                         // and so does shardwise
//
// The local array is ScaLAPACK's (column-major, leading dimension LLD) and the descriptor is
// the 9 integers ScaLAPACK reads, so the matrix goes to any ScaLAPACK routine as it is and
// comes back without a copy. An owning matrix allocates its part; a view wraps a local array
// and descriptor the program already has. The scalar is a type; the grid, the block sizes and
// the first process are run-time values, as ScaLAPACK's are.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <optional>
#include <utility>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "shardwise/scalapack/blacs.hpp"
#include "shardwise/scalapack/pgemm.hpp"

namespace shardwise::scalapack {

/// An m x n matrix distributed block-cyclically over a BLACS grid: this rank's local array
/// and the descriptor (see the top of this file).
template <typename Scalar>
class BlockCyclicMatrix {
  static_assert(shardwise::detail::is_array_scalar_v<Scalar>,
                "shardwise::scalapack::BlockCyclicMatrix: the scalar must be float, double, std::complex<float> "
                "or std::complex<double>");

 public:
  using scalar_type = Scalar;  ///< The element type.

  /// Owning: allocates this rank's part of an m x n matrix in mb x nb blocks, the first on
  /// process (rsrc, csrc) of the grid of BLACS context `context`, zero-filled. On every rank
  /// of the grid (no communication). std::invalid_argument for a process outside the grid.
  BlockCyclicMatrix(int context, int m, int n, int mb, int nb, int rsrc = 0, int csrc = 0) : grid_(grid_or_throw(context)) {
    if (m < 0 || n < 0 || mb < 1 || nb < 1 || rsrc < 0 || rsrc >= grid_.rows || csrc < 0 || csrc >= grid_.cols)
      throw std::invalid_argument("shardwise::scalapack::BlockCyclicMatrix: extents must not be negative, blocks at "
                                  "least 1, and the first process inside the grid");
    desc_ = {1, context, m, n, mb, nb, rsrc, csrc, 1};
    desc_[8] = static_cast<int>(std::max<std::int64_t>(1, rows_dim().local_extent(grid_.row)));
    owned_.assign(static_cast<std::size_t>(desc_[8]) * static_cast<std::size_t>(std::max<std::int64_t>(1, local_cols())),
                  Scalar(0));
    data_ = owned_.data();
    owning_ = true;
  }

  /// A copy of an owning matrix owns a copy of the local array; a copy of a view is a view of
  /// the same memory (as std::mdspan's).
  BlockCyclicMatrix(const BlockCyclicMatrix& other)
      : grid_(other.grid_), desc_(other.desc_), owned_(other.owned_), owning_(other.owning_) {
    data_ = owning_ ? owned_.data() : other.data_;
  }
  /// Moves the local array (nothing copied).
  BlockCyclicMatrix(BlockCyclicMatrix&& other) noexcept
      : grid_(other.grid_), desc_(other.desc_), owned_(std::move(other.owned_)), data_(other.data_),
        owning_(other.owning_) {
    other.data_ = nullptr;
  }
  /// As the constructors.
  BlockCyclicMatrix& operator=(const BlockCyclicMatrix& other) {
    if (this != &other) *this = BlockCyclicMatrix(other);
    return *this;
  }
  /// As the constructors.
  BlockCyclicMatrix& operator=(BlockCyclicMatrix&& other) noexcept {
    grid_ = other.grid_;
    desc_ = other.desc_;
    owned_ = std::move(other.owned_);
    data_ = other.data_;
    owning_ = other.owning_;
    other.data_ = nullptr;
    return *this;
  }
  ~BlockCyclicMatrix() = default;

  /// A view of a local array and its descriptor, as a ScaLAPACK program holds them: nothing
  /// is copied. Collective over the grid: every rank checks its descriptor (DTYPE 1, block
  /// sizes at least 1, RSRC/CSRC in the grid, LLD at least the local rows) and all throw the
  /// same std::invalid_argument when any rank's is wrong.
  static BlockCyclicMatrix view(Scalar* local, const int* desc) {
    BlockCyclicMatrix v(grid_or_throw(desc[1]));
    std::copy(desc, desc + 9, v.desc_.begin());
    v.data_ = local;
    const Descriptor d = Descriptor::from(desc);
    // Its accessors read the 9 integers of DTYPE 1 (pgemm() and the others also take DTYPE 2).
    std::string problem = desc[0] != 1 ? "DESCA(DTYPE_) is " + std::to_string(desc[0]) + ", not 1 (dense block-cyclic)"
                                       : detail::check_operand("A", d, v.grid_, 1, 1, 0, 0);
    int bad = problem.empty() ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, v.grid_.comm);
    if (bad) {
      // The first rank with a problem tells the others what it is.
      int first = problem.empty() ? INT_MAX : v.grid_.row * v.grid_.cols + v.grid_.col;
      MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, v.grid_.comm);
      std::array<char, 256> text{};
      if (v.grid_.row * v.grid_.cols + v.grid_.col == first) problem.copy(text.data(), text.size() - 1);
      MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, first, v.grid_.comm);
      std::string message = text.data();
      if (const auto at = message.find("DESCA"); at != std::string::npos) message.replace(at, 5, "the descriptor");
      throw std::invalid_argument("shardwise::scalapack::BlockCyclicMatrix::view: " + message + " (on grid rank " +
                                  std::to_string(first) + ")");
    }
    return v;
  }

  /// The descriptor, for ScaLAPACK calls.
  [[nodiscard]] const int* descriptor() const noexcept { return desc_.data(); }
  /// This rank's local array (column-major, leading dimension ld()).
  [[nodiscard]] Scalar* data() noexcept { return data_; }
  /// This rank's local array, read-only.
  [[nodiscard]] const Scalar* data() const noexcept { return data_; }
  /// The leading dimension of the local array (LLD).
  [[nodiscard]] std::int64_t ld() const noexcept { return desc_[8]; }
  /// Global rows (M).
  [[nodiscard]] std::int64_t rows() const noexcept { return desc_[2]; }
  /// Global columns (N).
  [[nodiscard]] std::int64_t cols() const noexcept { return desc_[3]; }
  /// Rows held by this rank (NUMROC).
  [[nodiscard]] std::int64_t local_rows() const { return rows_dim().local_extent(grid_.row); }
  /// Columns held by this rank (NUMROC).
  [[nodiscard]] std::int64_t local_cols() const { return cols_dim().local_extent(grid_.col); }
  /// The grid.
  [[nodiscard]] const Grid& grid() const noexcept { return grid_; }
  /// Whether this matrix owns its local array (false for a view).
  [[nodiscard]] bool owning() const noexcept { return owning_; }

  /// Sets each local element to f(global row, global column) (0-based).
  template <typename F>
  void fill(F&& f) {
    for_each_local([&](std::int64_t i, std::int64_t j, Scalar& x) { x = static_cast<Scalar>(f(i, j)); });
  }

  /// Calls f(global row, global column, element) for each element this rank holds.
  template <typename F>
  void for_each_local(F&& f) {
    const BlockCyclicDim r = rows_dim(), c = cols_dim();
    for (std::int64_t lj = 0; lj < local_cols(); ++lj)
      for (std::int64_t li = 0; li < local_rows(); ++li)
        f(r.global_index(li, grid_.row), c.global_index(lj, grid_.col), data_[lj * ld() + li]);
  }

 private:
  explicit BlockCyclicMatrix(const Grid& g) : grid_(g) {}

  static Grid grid_or_throw(int context) {
    if (!in_grid(context))
      throw std::invalid_argument("shardwise::scalapack::BlockCyclicMatrix: this process is not in the grid of "
                                  "BLACS context " + std::to_string(context));
    const std::optional<Grid> g = grid_of(context);
    if (!g) throw std::invalid_argument("shardwise::scalapack::BlockCyclicMatrix: this BLACS numbers its grids otherwise");
    return *g;
  }
  [[nodiscard]] BlockCyclicDim rows_dim() const { return Descriptor::from(desc_.data()).row_dim(grid_); }
  [[nodiscard]] BlockCyclicDim cols_dim() const { return Descriptor::from(desc_.data()).col_dim(grid_); }

  Grid grid_;
  std::array<int, 9> desc_{};
  std::vector<Scalar> owned_;
  Scalar* data_ = nullptr;
  bool owning_ = false;
};

/// C := alpha op(A) op(B) + beta C on whole matrices (op: 'N', 'T' or 'C'), computed by
/// pgemm(). Collective over the grid. std::invalid_argument, the same on every rank, when
/// the call is not covered (PgemmOutcome::reason says why: the extents disagree, A, B and C
/// are on different grids, ...).
template <typename Scalar>
void gemm(char transa, char transb, Scalar alpha, const BlockCyclicMatrix<Scalar>& a,
          const BlockCyclicMatrix<Scalar>& b, Scalar beta, BlockCyclicMatrix<Scalar>& c) {
  const auto m = static_cast<int>(c.rows()), n = static_cast<int>(c.cols());
  const bool a_as_is = detail::op_code(transa) == 0;
  const auto k = static_cast<int>(a_as_is ? a.cols() : a.rows());
  const std::int64_t a_rows = a_as_is ? a.rows() : a.cols();
  const bool b_as_is = detail::op_code(transb) == 0;
  const std::int64_t b_rows = b_as_is ? b.rows() : b.cols(), b_cols = b_as_is ? b.cols() : b.rows();
  if (a_rows != m || b_rows != k || b_cols != n)
    throw std::invalid_argument("shardwise::scalapack::gemm: op(A) is " + std::to_string(a_rows) + " x " +
                                std::to_string(k) + ", op(B) " + std::to_string(b_rows) + " x " +
                                std::to_string(b_cols) + " and C " + std::to_string(m) + " x " + std::to_string(n) +
                                "; they do not multiply");
  const PgemmOutcome o = pgemm<Scalar>(transa, transb, m, n, k, alpha, a.data(), 1, 1, a.descriptor(), b.data(), 1, 1,
                                       b.descriptor(), beta, c.data(), 1, 1, c.descriptor(), c.grid());
  if (o.result != PgemmResult::computed) throw std::invalid_argument("shardwise::scalapack::gemm: " + o.reason);
}

}  // namespace shardwise::scalapack
