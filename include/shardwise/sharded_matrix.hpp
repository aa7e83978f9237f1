// shardwise/sharded_matrix.hpp: a matrix distributed over a process mesh.
//
// A ShardedMatrix knows its global shape, holds this rank's block as one
// contiguous Eigen matrix, and refers to the ProcessGroupMesh it lives on. A
// dimension split over axes is cut in blocks that differ by at most one row or
// column (detail/partition.hpp); nothing is padded.
//
// Storage order: a matrix whose rows are split (and columns not) is row-major,
// any other column-major. The split dimension is then the outer one, so the
// blocks of all ranks concatenate into the gathered matrix: an AllGather along
// that dimension lands in place, with no pack or unpack. The order is a
// template parameter, like Eigen's, for code that wants the other one.
#pragma once

#include <Eigen/Core>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "shardwise/detail/partition.hpp"
#include "shardwise/detail/schedule_executor.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/policy.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

/// Row-major when only the rows are split, column-major otherwise (see the top of this file).
template <TensorShardingType Sh>
constexpr int default_storage_order() {
  return (!Sh::dim_axes[0].empty() && Sh::dim_axes[1].empty()) ? Eigen::RowMajor : Eigen::ColMajor;
}

/// Tag: allocate without initializing.
struct uninitialized_t {};
inline constexpr uninitialized_t uninitialized{};

template <typename Scalar, int Order>
using dense_matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Order>;

/// All ranks must pass the same values (global shapes): one small all-reduce over
/// the world, and every rank throws the same error when they differ.
inline void check_same_on_all_ranks(AnyCommunicator& world, std::initializer_list<std::int64_t> values,
                                    const char* what) {
  std::int64_t both[16]{};
  std::size_t n = 0;
  for (std::int64_t v : values) both[n++] = v;
  for (std::size_t i = 0; i < n; ++i) both[n + i] = -both[i];
  world.all_reduce(std::span<std::int64_t>(both, 2 * n), ReduceOp::max);
  for (std::size_t i = 0; i < n; ++i)
    if (both[i] != -both[n + i])
      throw std::invalid_argument(std::string("shardwise: ") + what +
                                  " differ across ranks (every rank must pass the same global shapes); "
                                  "value " + std::to_string(i) + " ranges from " + std::to_string(-both[n + i]) +
                                  " to " + std::to_string(both[i]));
}

}  // namespace detail

/// Whether matmul and distribute check, with one small all-reduce, that every rank
/// passed the same global shapes (on by default; a mismatch otherwise hangs or
/// gives wrong results). Switch off in tight loops once a program is known good.
inline std::atomic<bool>& cross_rank_shape_checks() {
  static std::atomic<bool> enabled{true};
  return enabled;
}

/// A matrix distributed over the mesh M as the sharding Sh says.
template <typename Scalar, MeshType M, TensorShardingType Sh, int Order = detail::default_storage_order<Sh>()>
class ShardedMatrix {
  static_assert(std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>,
                "shardwise::ShardedMatrix: the scalar type must be float or double");
  static_assert(Order == Eigen::RowMajor || Order == Eigen::ColMajor,
                "shardwise::ShardedMatrix: the storage order must be Eigen::RowMajor or Eigen::ColMajor");
  // Completing the checker instantiates its static_asserts: a bad sharding is reported once,
  // with its own message (asserting on its `value` would add a second, textless error).
  static_assert(sizeof(detail::checked_sharding<M, Sh, 2>) > 0);

 public:
  using scalar_type = Scalar;
  using mesh_type = M;
  using sharding = Sh;
  static constexpr int storage_order = Order;
  /// This rank's block.
  using local_matrix = detail::dense_matrix<Scalar, Order>;
  /// A whole matrix (column-major, Eigen's default).
  using global_matrix = detail::dense_matrix<Scalar, Eigen::ColMajor>;

  /// A zero matrix of the given global shape.
  ShardedMatrix(ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols)
      : groups_(&groups), rows_(rows), cols_(cols) {
    if (rows < 0 || cols < 0)
      throw std::invalid_argument("shardwise::ShardedMatrix: the shape " + std::to_string(rows) + " x " +
                                  std::to_string(cols) + " has a negative extent");
    block_.setZero(local_rows(), local_cols());
  }

  /// From a global matrix that every rank holds (no communication, but for the shape check).
  template <typename Derived>
  static ShardedMatrix distribute(ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global) {
    if (cross_rank_shape_checks())
      detail::check_same_on_all_ranks(groups.world(), {global.rows(), global.cols()},
                                      "the global matrices given to distribute()");
    ShardedMatrix result(groups, global.rows(), global.cols());
    if (result.holds_partial_share())
      result.block_ = global.block(result.row_offset(), result.col_offset(), result.local_rows(), result.local_cols());
    return result;
  }

  /// From a global matrix that only `root` (a world rank) holds: it sends every rank its block.
  template <typename Derived>
  static ShardedMatrix scatter(ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global, int root = 0) {
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

  /// Builds a matrix from this rank's block (e.g. a kernel's output); the shape must fit the sharding.
  static ShardedMatrix from_local(ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols,
                                  local_matrix block) {
    ShardedMatrix result(groups, rows, cols);
    if (block.rows() != result.local_rows() || block.cols() != result.local_cols())
      throw std::invalid_argument("shardwise::ShardedMatrix::from_local: the block is " +
                                  std::to_string(block.rows()) + " x " + std::to_string(block.cols()) +
                                  " but this rank's block of a " + std::to_string(rows) + " x " +
                                  std::to_string(cols) + " matrix is " + std::to_string(result.local_rows()) +
                                  " x " + std::to_string(result.local_cols()));
    result.block_ = std::move(block);
    return result;
  }

  /// The whole matrix on every rank (reduces a Partial, then gathers).
  [[nodiscard]] global_matrix to_global() const;

  [[nodiscard]] std::int64_t rows() const { return rows_; }
  [[nodiscard]] std::int64_t cols() const { return cols_; }
  [[nodiscard]] std::int64_t local_rows() const { return geometry().extent(rows_, resolved().dims[0]); }
  [[nodiscard]] std::int64_t local_cols() const { return geometry().extent(cols_, resolved().dims[1]); }
  [[nodiscard]] std::int64_t row_offset() const { return geometry().offset(rows_, resolved().dims[0]); }
  [[nodiscard]] std::int64_t col_offset() const { return geometry().offset(cols_, resolved().dims[1]); }

  /// This rank's block, as a map over contiguous storage.
  [[nodiscard]] Eigen::Map<local_matrix> local() { return {block_.data(), block_.rows(), block_.cols()}; }
  [[nodiscard]] Eigen::Map<const local_matrix> local() const { return {block_.data(), block_.rows(), block_.cols()}; }

  /// Moves this rank's block out (the matrix is left empty).
  [[nodiscard]] local_matrix release() && { return std::move(block_); }

  [[nodiscard]] ProcessGroupMesh<M>& groups() const { return *groups_; }

  /// A matrix whose block is allocated but not initialized, for kernels that write all of it.
  ShardedMatrix(ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols, detail::uninitialized_t)
      : groups_(&groups), rows_(rows), cols_(cols), block_(local_rows(), local_cols()) {}

 private:
  static constexpr detail::resolved_sharding<2> resolved() { return detail::resolve_sharding<M, Sh>(); }
  [[nodiscard]] detail::block_geometry<M> geometry() const { return {groups_->mesh(), groups_->coordinate()}; }

  struct placement {
    std::int64_t row_offset, col_offset, rows, cols;
    bool holds_share;
  };
  /// Where the block of the rank at `coordinate` sits. Of a Partial, the rank at
  /// coordinate 0 along the Partial axes holds the value and the others zeros.
  [[nodiscard]] placement block_of(const typename M::coordinate_type& coordinate) const {
    const detail::block_geometry<M> g{groups_->mesh(), coordinate};
    constexpr auto r = resolved();
    bool share = true;
    for (int axis : r.partial) share = share && coordinate[static_cast<std::size_t>(axis)] == 0;
    return {g.offset(rows_, r.dims[0]), g.offset(cols_, r.dims[1]), g.extent(rows_, r.dims[0]),
            g.extent(cols_, r.dims[1]), share};
  }
  [[nodiscard]] bool holds_partial_share() const { return block_of(groups_->coordinate()).holds_share; }

  ProcessGroupMesh<M>* groups_;
  std::int64_t rows_, cols_;
  local_matrix block_;
};

/// Changes the sharding without a GEMM, as far as that needs no reshuffle: reduce a
/// Partial (AllReduce), or ReduceScatter it into a dimension, or gather minor axes
/// (see reshard_plan). Anything else does not compile.
template <TensorShardingType To, int OrderTo = detail::default_storage_order<To>(), typename Scalar, MeshType M,
          TensorShardingType From, int OrderFrom>
ShardedMatrix<Scalar, M, To, OrderTo> reshard(const ShardedMatrix<Scalar, M, From, OrderFrom>& x) {
  using Plan = reshard_plan<M, From, To>;
  ShardedMatrix<Scalar, M, To, OrderTo> result(x.groups(), x.rows(), x.cols(), detail::uninitialized);
  detail::operand_state initial{};
  initial.c = detail::resolve_sharding<M, From>().dims;
  detail::schedule_executor<Plan, Scalar, M, Eigen::ColMajor, Eigen::ColMajor, OrderFrom, OrderTo>::run(
      x.groups(), MatmulShape{x.rows(), 0, x.cols()}, initial, nullptr, nullptr, x.local().data(),
      result.local().data());
  return result;
}

/// Finishes a pending sum: Partial<axes> becomes the plain sharding (one AllReduce).
template <typename Scalar, MeshType M, TensorShardingType From, int Order>
auto reduce(const ShardedMatrix<Scalar, M, From, Order>& x) {
  static_assert(From::is_partial, "shardwise::reduce: the matrix has no Partial<...> to reduce");
  return reshard<TensorSharding<typename From::template dim<0>, typename From::template dim<1>>>(x);
}

/// Finishes a pending sum into a requested sharding (e.g. a ReduceScatter split).
template <TensorShardingType To, typename Scalar, MeshType M, TensorShardingType From, int Order>
auto reduce(const ShardedMatrix<Scalar, M, From, Order>& x) {
  static_assert(From::is_partial, "shardwise::reduce: the matrix has no Partial<...> to reduce");
  return reshard<To>(x);
}

template <typename Scalar, MeshType M, TensorShardingType Sh, int Order>
auto ShardedMatrix<Scalar, M, Sh, Order>::to_global() const -> global_matrix {
  return reshard<replicated_sharding_t<2>, Eigen::ColMajor>(*this).release();
}

}  // namespace shardwise
