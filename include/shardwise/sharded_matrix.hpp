// shardwise/sharded_matrix.hpp: a matrix distributed over a process mesh.
//
// A ShardedMatrix knows its global shape, holds this rank's block as one contiguous Eigen
// matrix, and shares the groups of the ProcessGroupMesh it was built on (so it keeps working
// when that object is moved, e.g. into a ParallelContext). A dimension split over axes is
// cut in blocks that differ by at most one row or column (detail/partition.hpp); nothing is
// padded.
//
// Storage order: a matrix whose rows are split (and columns not) is row-major, any other
// column-major. The split dimension is then the outer one, so the blocks of all ranks
// concatenate into the gathered matrix: an AllGather along that dimension lands in place,
// with no pack or unpack. The order is a template parameter, like Eigen's, for code that
// wants the other one.
//
// Ownership is the fifth parameter: Owning (the default, everything above) or a view of memory
// the caller keeps (View, ConstView), whose block may have any strides (a leading dimension,
// a transposed block); the view is shardwise/view.hpp's.
#pragma once

#include <Eigen/Core>
#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/kernels/permute.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

/// Ownership of an array's block: the array allocates and frees it (the default).
struct Owning {};

namespace detail {
/// Ownership of an array's block: memory the caller keeps, writable through the array or not.
/// `Order`: for a tensor view, the storage order the planner plans for (rank 0: row-major);
/// a permuted view has the permuted one. Matrices carry theirs in their own parameter.
template <bool Const, dim_order Order = dim_order{}>
struct view_ownership {};
}  // namespace detail

/// Ownership: a view of memory the caller keeps and may write through (shardwise/view.hpp).
using View = detail::view_ownership<false>;
/// Ownership: a read-only view of memory the caller keeps (shardwise/view.hpp).
using ConstView = detail::view_ownership<true>;

namespace detail {

/// Row-major when only the rows are split, column-major otherwise (see the top of this file).
/// Anything that is not a matrix sharding gets column-major, so that only the message that
/// names the mistake is reported.
template <typename Sh>
constexpr int default_storage_order() {
  if constexpr (is_tensor_sharding_v<Sh>) {
    if constexpr (Sh::rank == 2)
      return (!Sh::dim_axes[0].empty() && Sh::dim_axes[1].empty()) ? Eigen::RowMajor : Eigen::ColMajor;
  }
  return Eigen::ColMajor;
}

/// Tag: allocate without initializing.
struct uninitialized_t {};
inline constexpr uninitialized_t uninitialized{};

template <typename Scalar, int Order>
using dense_matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Order>;

/// Copies the rows x cols block at (row, col) of a matrix stored at `from` (outer stride
/// `from_stride`, row-major or not) into contiguous storage at `to` (row-major or not). Out of
/// line and per scalar only: every ShardedMatrix type shares it.
template <typename Scalar>
[[gnu::noinline]] void copy_matrix_block(const Scalar* from, std::int64_t from_stride, bool from_row_major,
                                         std::int64_t row, std::int64_t col, std::int64_t rows, std::int64_t cols,
                                         Scalar* to, bool to_row_major) {
  // Element (i, j) of the source block, as strides.
  const std::int64_t row_step = from_row_major ? from_stride : 1, col_step = from_row_major ? 1 : from_stride;
  const Scalar* first = from + row * row_step + col * col_step;
  if (to_row_major) copy_strided(first, row_step, col_step, to, rows, cols);
  else copy_strided(first, col_step, row_step, to, cols, rows);  // the transpose, row-major: the same memory
}

/// What a ShardedMatrix is apart from its mesh and sharding types: the global shape, this
/// rank's block, and where the block sits (computed once, when the matrix is made). Its code
/// is compiled once per scalar and storage order, whatever the sharding.
template <typename Scalar, int Order>
class matrix_block {
 public:
  /// This rank's block.
  using local_matrix = dense_matrix<Scalar, Order>;

  /// Global shape.
  [[nodiscard]] std::int64_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::int64_t cols() const noexcept { return cols_; }
  /// This rank's block: its shape, and where it starts in the global matrix.
  [[nodiscard]] std::int64_t local_rows() const noexcept { return local_rows_; }
  [[nodiscard]] std::int64_t local_cols() const noexcept { return local_cols_; }
  [[nodiscard]] std::int64_t row_offset() const noexcept { return row_offset_; }
  [[nodiscard]] std::int64_t col_offset() const noexcept { return col_offset_; }

  /// This rank's block, as a map over contiguous storage.
  [[nodiscard]] Eigen::Map<local_matrix> local() { return {block_.data(), block_.rows(), block_.cols()}; }
  [[nodiscard]] Eigen::Map<const local_matrix> local() const { return {block_.data(), block_.rows(), block_.cols()}; }

  /// Moves this rank's block out. The matrix is then unusable: every operation on it throws
  /// std::logic_error (as on a moved-from one) until a matrix is assigned to it.
  [[nodiscard]] local_matrix release() && {
    released_ = true;
    return std::move(block_);
  }
  /// True once release() has moved the block out.
  [[nodiscard]] bool released() const noexcept { return released_; }

 protected:
  /// A block of this rank's extents for a `rows` x `cols` matrix split as `axes`, allocated but
  /// not initialized.
  matrix_block(std::int64_t rows, std::int64_t cols, const block_geometry& geo, const tensor_axes& axes)
      : rows_(rows), cols_(cols) {
    if (rows < 0 || cols < 0) fail({"shardwise::ShardedMatrix: the shape ", rows, " x ", cols, " has a negative extent"});
    local_rows_ = geo.extent(rows, axes.dim(0));
    local_cols_ = geo.extent(cols, axes.dim(1));
    row_offset_ = geo.offset(rows, axes.dim(0));
    col_offset_ = geo.offset(cols, axes.dim(1));
    block_.resize(local_rows_, local_cols_);
  }

  local_matrix block_;
  bool released_ = false;

 private:
  std::int64_t rows_, cols_, local_rows_ = 0, local_cols_ = 0, row_offset_ = 0, col_offset_ = 0;
};

/// checked_sharding for a matrix, reached only for a TensorSharding (a bare Split<...> has its
/// own message below, and no other).
template <typename M, typename Sh, bool IsTensorSharding>
struct matrix_sharding_check {
  static constexpr bool value = false;
};
template <typename M, typename Sh>
struct matrix_sharding_check<M, Sh, true> : checked_sharding<M, Sh, 2> {};

/// The checks a ShardedMatrix's parameters must pass, each with its own message.
template <typename M, typename Sh>
struct checked_matrix_sharding {
  static_assert(is_tensor_sharding_v<Sh>,
                "shardwise::ShardedMatrix<Scalar, Mesh, Sharding>: the sharding must be a "
                "shardwise::TensorSharding<rows, columns>, e.g. TensorSharding<Split<\"x\">, Replicated>; a bare "
                "Split<...> or Replicated describes one dimension only");
  // Deriving completes the inner checker, whose static_asserts then report a wrong rank or axis.
  static constexpr bool value = matrix_sharding_check<M, Sh, is_tensor_sharding_v<Sh>>::value;
  static_assert(sizeof(matrix_sharding_check<M, Sh, is_tensor_sharding_v<Sh>>) > 0);
};

}  // namespace detail

/// A matrix distributed over the mesh M as the sharding Sh says.
///
/// The shape and block accessors (rows(), cols(), local_rows(), local_cols(), row_offset(),
/// col_offset(), local()) and release() forward to its base, the part of a ShardedMatrix that
/// does not depend on the mesh or the sharding (its code is compiled once per scalar type and
/// storage order).
///
/// `Ownership` is Owning (this class) or View / ConstView (a view of the caller's memory,
/// defined in shardwise/view.hpp).
template <typename Scalar, MeshType M, typename Sh, int Order = detail::default_storage_order<Sh>(),
          typename Ownership = Owning>
class ShardedMatrix : public detail::matrix_block<Scalar, Order> {
  using base = detail::matrix_block<Scalar, Order>;

  static_assert(std::is_same_v<Ownership, Owning>,
                "shardwise::ShardedMatrix: the ownership must be shardwise::Owning, shardwise::View or "
                "shardwise::ConstView; for a view, include <shardwise/view.hpp>");

  static_assert(detail::is_array_scalar_v<Scalar>,
                "shardwise::ShardedMatrix: the scalar type must be float, double, std::complex<float> or "
                "std::complex<double>");
  static_assert(Order == Eigen::RowMajor || Order == Eigen::ColMajor,
                "shardwise::ShardedMatrix: the storage order must be Eigen::RowMajor or Eigen::ColMajor");
  // Completing the checker instantiates its static_asserts: a bad sharding is reported once,
  // with its own message (asserting on its `value` would add a second, textless error).
  static_assert(sizeof(detail::checked_matrix_sharding<M, Sh>) > 0);

 public:
  using scalar_type = Scalar;  ///< The element type: float, double or a std::complex of one.
  using mesh_type = M;         ///< The mesh it is distributed over.
  using sharding = Sh;         ///< How its rows and columns are split (a TensorSharding of rank 2).
  using ownership = Owning;    ///< It owns its block (shardwise/view.hpp has the views).
  /// Storage order of this rank's block: Eigen::RowMajor or Eigen::ColMajor.
  static constexpr int storage_order = Order;
  /// This rank's block.
  using local_matrix = detail::dense_matrix<Scalar, Order>;

  // The shape and the block are the base's; these forward to it, so that the reference lists
  // them with the class (the base is internal).
  /// Global number of rows.
  [[nodiscard]] std::int64_t rows() const noexcept { return base::rows(); }
  /// Global number of columns.
  [[nodiscard]] std::int64_t cols() const noexcept { return base::cols(); }
  /// Rows of this rank's block.
  [[nodiscard]] std::int64_t local_rows() const noexcept { return base::local_rows(); }
  /// Columns of this rank's block.
  [[nodiscard]] std::int64_t local_cols() const noexcept { return base::local_cols(); }
  /// The global row where this rank's block starts.
  [[nodiscard]] std::int64_t row_offset() const noexcept { return base::row_offset(); }
  /// The global column where this rank's block starts.
  [[nodiscard]] std::int64_t col_offset() const noexcept { return base::col_offset(); }
  /// This rank's block, as a map over contiguous storage.
  ///@{
  [[nodiscard]] Eigen::Map<local_matrix> local() { return base::local(); }
  [[nodiscard]] Eigen::Map<const local_matrix> local() const { return base::local(); }
  ///@}
  /// Moves this rank's block out. The matrix is then unusable: every operation on it throws
  /// std::logic_error (as on a moved-from one) until a matrix is assigned to it.
  [[nodiscard]] local_matrix release() && { return std::move(*this).base::release(); }
  /// True once release() has moved the block out.
  [[nodiscard]] bool released() const noexcept { return base::released(); }

  /// A whole matrix (column-major, Eigen's default).
  using global_matrix = detail::dense_matrix<Scalar, Eigen::ColMajor>;

  /// A zero matrix of the given global shape. Local: no communication, so nothing compares the
  /// shape across ranks here; the first collective operation on the matrix (matmul, to_global,
  /// reshard...) does, and its error says so.
  ShardedMatrix(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols)
      : ShardedMatrix(groups, rows, cols, detail::uninitialized) {
    block_.setZero();
  }

  /// A matrix whose block is allocated but not initialized, for kernels that write all of it.
  ShardedMatrix(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols, detail::uninitialized_t)
      : base(rows, cols, groups.geometry(), axes), groups_(groups) {
    (void)groups_.state("ShardedMatrix");  // a moved-from mesh cannot hold a matrix
  }

  /// From a global matrix that every rank holds (no communication, but for the shape check).
  template <typename Derived>
  static ShardedMatrix distribute(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global) {
    const std::int64_t shape[] = {global.rows(), global.cols()};
    agree_on_all_ranks(groups.world(), shape, {}, "shardwise::ShardedMatrix::distribute",
                       "the shapes of the global matrices", "rows of the global matrix|columns of the global matrix");
    ShardedMatrix result(groups, global.rows(), global.cols(), detail::uninitialized);
    if (!result.holds_partial_share()) {
      result.block_.setZero();
    } else if constexpr (requires { global.derived().data(); global.derived().outerStride(); }) {
      detail::copy_matrix_block<Scalar>(global.derived().data(), global.derived().outerStride(), Derived::IsRowMajor,
                                        result.row_offset(), result.col_offset(), result.local_rows(),
                                        result.local_cols(), result.block_.data(), Order == Eigen::RowMajor);
    } else {  // an expression: evaluated once, then the same copy
      const global_matrix plain = global;
      return distribute(groups, plain);
    }
    return result;
  }

  /// Groups over another Mesh type than the matrix's: the static_assert that says so (at the
  /// call: the return type is deduced there).
  template <typename Other, typename... Rest>
    requires(!std::same_as<Other, M>)
  static auto distribute(const ProcessGroupMesh<Other>&, const Rest&...) {
    static_assert(detail::dependent_false<Other>,
                  "shardwise::ShardedMatrix::distribute: the ProcessGroupMesh is over another Mesh than the matrix; "
                  "declare the ShardedMatrix on the same Mesh<...> as the groups");
  }

  /// From a global matrix that only `root` (a world rank) holds: it sends every rank its block.
  template <typename Derived>
  static ShardedMatrix scatter(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global,
                               int root = 0) {
    AnyCommunicator& world = groups.world();
    // Before the broadcast, whose own check would name broadcast rather than scatter.
    if (root < 0 || root >= world.size())
      throw std::invalid_argument("shardwise::ShardedMatrix::scatter: root " + std::to_string(root) +
                                  " is not a rank of the mesh; give a rank from 0 to " +
                                  std::to_string(world.size() - 1));
    std::int64_t shape[2] = {global.rows(), global.cols()};
    world.broadcast(std::span<std::int64_t>(shape), root);
    ShardedMatrix result(groups, shape[0], shape[1]);
    constexpr int tag = 0x5e1;
    if (groups.rank() == root) {
      local_matrix block;
      for (int r = 0; r < world.size(); ++r) {
        const auto where = result.block_of(groups.mesh().unravel(r));
        if (!where.holds_share) continue;
        if (r == root) {
          result.block_ = global.block(where.row_offset, where.col_offset, where.rows, where.cols);
          continue;
        }
        block = global.block(where.row_offset, where.col_offset, where.rows, where.cols);
        world.send(std::span<const Scalar>(block.data(), static_cast<std::size_t>(block.size())), r, tag);
      }
    } else if (result.holds_partial_share()) {
      world.recv(std::span<Scalar>(result.block_.data(), static_cast<std::size_t>(result.block_.size())), root, tag);
    }
    return result;
  }

  /// Builds a matrix from this rank's block, such as a kernel's output; the shape must fit the
  /// sharding, and be the same on every rank (collective: the check of every operation).
  static ShardedMatrix from_local(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols,
                                  local_matrix block) {
    LocalProblem problem;
    const detail::block_geometry geo = groups.geometry();
    const std::int64_t want_rows = rows < 0 ? 0 : geo.extent(rows, axes.dim(0));
    const std::int64_t want_cols = cols < 0 ? 0 : geo.extent(cols, axes.dim(1));
    if (block.rows() != want_rows || block.cols() != want_cols)
      problem.set(detail::message({"the block is ", block.rows(), " x ", block.cols(), " but this rank's block of a ",
                                   rows, " x ", cols, " matrix is ", want_rows, " x ", want_cols}));
    const std::int64_t shape[] = {rows, cols};
    agree_on_all_ranks(groups.world(), shape, problem, "shardwise::ShardedMatrix::from_local", "the global shapes",
                       "global rows|global columns");
    ShardedMatrix result(groups, rows, cols, detail::uninitialized);
    result.block_ = std::move(block);
    return result;
  }

  /// The whole matrix on every rank (reduces a Partial, then gathers). Collective.
  [[nodiscard]] global_matrix to_global() const {
    agree("shardwise::ShardedMatrix::to_global");
    global_matrix global(rows(), cols());
    detail::execute<detail::reshard_program<M, Sh, replicated_sharding_t<2>, detail::matrix_order(Order),
                                            detail::matrix_order(Eigen::ColMajor)>, Scalar>(
        groups_.state("to_global"), {{{}, {}, {rows(), cols()}}}, {nullptr, nullptr, block_.data(), global.data()});
    return global;
  }

  /// The groups it lives on (a handle that shares them).
  [[nodiscard]] const ProcessGroupMesh<M>& groups() const noexcept { return groups_; }

  /// False once moved from (it then holds neither a block nor groups) or released.
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(groups_) && !this->released_; }
  /// std::logic_error naming `operation` and `role` ("A") when moved from or released.
  void check_valid(const char* operation, const char* role) const {
    if (!valid()) detail::throw_unusable(operation, role, "matrix", this->released_);
  }
  /// Collective: checks that every rank holds this matrix with the same global shape (at
  /// CheckLevel::cross_rank), else every rank throws the same error; and that it was not moved from.
  void agree(const char* operation, const char* role = "the matrix") const {
    check_valid(operation, role);
    const std::int64_t shape[] = {rows(), cols()};
    agree_on_all_ranks(groups_.world(), shape, {}, operation, "the global shapes",
                       "rows of the matrix|columns of the matrix", detail::constructed_locally);
  }

  /// The sharding resolved against the mesh: the mesh axes splitting rows and columns.
  static constexpr detail::tensor_axes axes = [] {
    if constexpr (detail::checked_matrix_sharding<M, Sh>::value)
      return detail::tensor_axes::of(detail::resolve_sharding<M, Sh>());
    else
      return detail::tensor_axes{};
  }();

 private:
  struct placement {
    std::int64_t row_offset, col_offset, rows, cols;
    bool holds_share;
  };
  /// Where the block of the rank at `coordinate` sits. Of a Partial, the rank at
  /// coordinate 0 along the Partial axes holds the value and the others zeros.
  [[nodiscard]] placement block_of(const typename M::coordinate_type& coordinate) const {
    const detail::block_geometry g{groups_.mesh(), coordinate};
    const detail::tensor_axes& r = axes;
    bool share = true;
    for (int axis : r.partial) share = share && coordinate[static_cast<std::size_t>(axis)] == 0;
    return {g.offset(rows(), r.dim(0)), g.offset(cols(), r.dim(1)), g.extent(rows(), r.dim(0)), g.extent(cols(), r.dim(1)),
            share};
  }
  [[nodiscard]] bool holds_partial_share() const { return block_of(groups_.coordinate()).holds_share; }

  using base::block_;
  ProcessGroupMesh<M> groups_;
};

}  // namespace shardwise
