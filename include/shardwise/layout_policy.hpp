// shardwise/layout_policy.hpp: how this rank's block of a DistributedArray is stored.
//
// The local layout policies, as std::mdspan's: the order a block's dimensions are stored in
// (what the planner plans for and the executor's packs read) and how Eigen sees it. Where the
// blocks are (block_geometry, tensor_axes, the block-cyclic index maps) is layout.hpp's, which
// this builds on. Pure compile-time: no MPI, no Eigen.
#pragma once

#include <cstddef>

#include "shardwise/layout.hpp"

namespace shardwise {

namespace detail {
/// How an array's block is seen from Eigen: a matrix (Eigen::Matrix, Map), an N-D tensor
/// (Eigen::Tensor), or an activation [b, s, m] kept as a matrix of tokens x m.
enum class array_face { matrix, tensor, tokens };
}  // namespace detail

/// Local layout policies of a DistributedArray (shardwise/distributed_array.hpp), as
/// std::mdspan's: the order this rank's block is stored in (what the planner plans for and the
/// executor's packs read) and how Eigen sees it. An owning block is contiguous in that order; a
/// view of the same layout may have any strides (a leading dimension larger than the block).

/// A matrix block, an Eigen matrix of Eigen's storage order `EigenOrder` (Eigen::ColMajor is
/// 0, Eigen::RowMajor 1): ShardedMatrix's layout.
template <int EigenOrder>
struct MatrixLayout {
  /// How Eigen sees the block: a matrix.
  static constexpr detail::array_face face = detail::array_face::matrix;
  /// Eigen's storage order of the block.
  static constexpr int eigen_order = EigenOrder;
  /// The storage order of a block of `Rank` dimensions (a matrix has 2).
  template <std::size_t Rank>
  static constexpr detail::dim_order order = detail::matrix_order(EigenOrder);
};

/// An N-D block in `Order`, outermost dimension first (the default, empty: row-major, the
/// last dimension contiguous): ShardedTensor's layout. An owning block is a row-major
/// Eigen::Tensor; a view (a permuted one) may have any order.
template <detail::dim_order Order = detail::dim_order{}>
struct TensorLayout {
  /// How Eigen sees the block: an Eigen::Tensor.
  static constexpr detail::array_face face = detail::array_face::tensor;
  /// Eigen::RowMajor: the Eigen::Tensor of an owning block.
  static constexpr int eigen_order = 1;
  /// The storage order of a block of `Rank` dimensions.
  template <std::size_t Rank>
  static constexpr detail::dim_order order =
      Order.rank == 0 ? detail::dim_order::row_major(static_cast<int>(Rank)) : Order;
};

/// An activation X[b, s, m] kept as a matrix of tokens x m whose tokens are sequence-major
/// (row s_index * b + b_index, Megatron-LM's [s, b, h]; the same in every rank's block),
/// stored in Eigen's order `EigenOrder`: FeedForward's activations. A split along the
/// sequence is then a split into contiguous row blocks.
template <int EigenOrder>
struct SequenceMajor {
  /// How Eigen sees the block: a matrix of tokens x m.
  static constexpr detail::array_face face = detail::array_face::tokens;
  /// Eigen's storage order of the matrix of tokens.
  static constexpr int eigen_order = EigenOrder;
  /// The storage order of the block as [b, s, m].
  template <std::size_t Rank>
  static constexpr detail::dim_order order = detail::activation_order(EigenOrder);
};

}  // namespace shardwise
