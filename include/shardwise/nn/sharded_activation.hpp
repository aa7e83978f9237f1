// shardwise/nn/sharded_activation.hpp: an activation X[b, s, m] distributed over a mesh.
//
// An activation is the one distributed array type (shardwise/distributed_array.hpp) with the
// SequenceMajor layout (layout_policy.hpp): kept as a matrix of tokens x m whose tokens are
// sequence-major, row = s * b + b_index (Megatron-LM's [s, b, h]), both globally and in every
// rank's block (row = s_local * b_local + b_local_index). A split along the sequence
// (Megatron-SP) is then a split into contiguous row blocks, so its AllGather and ReduceScatter
// land in place with no packing. A split along the batch (GSPMD) is not contiguous in the
// global order, but no policy gathers along b. With s = 1 (an MLP on plain samples) the rows
// are simply the samples.
//
// Storage order of the block: column-major when m is split (an AllGather or ReduceScatter
// along m then moves contiguous column blocks), row-major otherwise (one along s moves
// contiguous row blocks).
//
// Replicated means "not split over that axis". An activation is only ever communicated along
// the axes its sharding names: along the others, each group of ranks holds its own (e.g.
// data-parallel replicas with different data, or pipeline stages), and only the ranks that
// share one agree on its shape.
#pragma once

#include "shardwise/distributed_array.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/mesh.hpp"

namespace shardwise {

/// An activation X[b, s, m] distributed over the mesh M as the rank-3 sharding Sh says:
/// the DistributedArray with the SequenceMajor layout of Sh's order (see the top of this file).
/// Made with (groups, b, s, m) or distribute(groups, tokens_x_m, b, s); batch(), seq(), model()
/// and local() (local tokens x local m) read it.
template <typename Scalar, MeshType M, typename Sh>
using ShardedActivation = DistributedArray<Scalar, M, Sh, SequenceMajor<detail::default_activation_order<Sh>()>>;

}  // namespace shardwise
