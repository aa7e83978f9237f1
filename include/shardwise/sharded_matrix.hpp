// shardwise/sharded_matrix.hpp: a matrix distributed over a process mesh.
//
//   using A_t = sw::ShardedMatrix<double, Grid, sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>>;
//   auto a = A_t::distribute(groups, global);   // each rank keeps its block
//   Eigen::MatrixXd all = a.to_global();
//
// ShardedMatrix is the one distributed array type (shardwise/distributed_array.hpp) with a
// matrix layout: it knows its global shape, holds this rank's block as one contiguous Eigen
// matrix (local() is a map of it), and shares the groups of the ProcessGroupMesh it was built
// on (so it keeps working when that object is moved, e.g. into a ParallelContext). A dimension
// split over axes is cut in blocks that differ by at most one row or column
// (detail/partition.hpp); nothing is padded.
//
// Storage order: a matrix whose rows are split (and columns not) is row-major, any other
// column-major. The split dimension is then the outer one, so the blocks of all ranks
// concatenate into the gathered matrix: an AllGather along that dimension lands in place,
// with no pack or unpack. The order is a template parameter, like Eigen's, for code that
// wants the other one.
//
// Ownership is the fifth parameter: Owning (the default, everything above) or a view of memory
// the caller keeps (View, ConstView), whose block may have any strides (a leading dimension,
// a transposed block); shardwise/view.hpp makes them.
#pragma once

#include <Eigen/Core>

#include "shardwise/distributed_array.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/mesh.hpp"

namespace shardwise {

/// A matrix distributed over the mesh M as the sharding Sh (a TensorSharding of two
/// dimensions) says, its block stored in Eigen's order `Order`: the DistributedArray with
/// MatrixLayout<Order>. Its shape is rows() x cols(), this rank's block local_rows() x
/// local_cols() at (row_offset(), col_offset()), and local() an Eigen map of the block.
template <typename Scalar, MeshType M, typename Sh, int Order = detail::default_storage_order<Sh>(),
          typename Ownership = Owning>
using ShardedMatrix = DistributedArray<Scalar, M, Sh, MatrixLayout<Order>, Ownership>;

/// A writable view of a matrix whose block the caller keeps.
template <typename Scalar, MeshType M, typename Sh, int Order = detail::default_storage_order<Sh>()>
using ShardedMatrixView = ShardedMatrix<Scalar, M, Sh, Order, View>;
/// A read-only view of a matrix whose block the caller keeps.
template <typename Scalar, MeshType M, typename Sh, int Order = detail::default_storage_order<Sh>()>
using ShardedMatrixConstView = ShardedMatrix<Scalar, M, Sh, Order, ConstView>;

}  // namespace shardwise
