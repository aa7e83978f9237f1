// The meshes and shardings the matmul benchmark programs (matmul_bench, overhead_bench) time:
// one axis of every rank (Line) or a grid, and the operand layouts of each policy.
#pragma once

#include <shardwise/mesh.hpp>
#include <shardwise/sharding.hpp>

namespace shardwise::bench {

using Line = Mesh<Axis<"x", dynamic_extent>>;
using Grid = Mesh<Axis<"x", dynamic_extent>, Axis<"y", dynamic_extent>>;
using Rep = replicated_sharding_t<2>;
using RowsSplit = TensorSharding<Split<"x">, Replicated>;
using ColsSplit = TensorSharding<Replicated, Split<"x">>;
using Block = TensorSharding<Split<"x">, Split<"y">>;

}  // namespace shardwise::bench
