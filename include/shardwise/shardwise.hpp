// shardwise/shardwise.hpp: the whole library on matrices in one include: the core with the
// sharding planner and the nn/ layers. A numerical code that needs neither includes
// shardwise/core.hpp (the same arrays and operations, with tensors and linalg); tensor.hpp is
// this header with tensors, einsum and linalg.
//
// Layers, bottom up (each header can also be included on its own; none includes a header of
// a layer above it, and the pure compile-time ones include neither MPI nor Eigen):
//   detail/                    leaf utilities: fixed_string, static_vector, text, partition
//   mesh, sharding, traffic    pure compile-time vocabulary: mesh, shardings, bytes and messages
//   layout                     axis lists, block geometry, tensor shardings as values, storage orders
//   plan/                      the planner: steps, contraction and reshard planning, matmul policies,
//                              cost model, describe(), programs (storage orders)
//   comm/                      Communicator concept; MPI and counting backends (the virtual cluster,
//                              threads for tests and laptops, is one more include:
//                              shardwise/comm/virtual_cluster.hpp; an MPI program need not parse it)
//   mpi_environment            MPI_Init / MPI_Finalize as a scope; MPI_Abort on an escaping exception
//   process_group_mesh         one communicator per subset of mesh axes
//   parallel_context           parallel modes (data, tensor, pipeline, ...) over the mesh; launchers
//   kernels/                   the one executor, GEMM (BLAS or Eigen), packing, scratch space
//   sharded_matrix             a matrix distributed over the mesh
//   reshard, matmul            operations: reshard and reduce; C = A * B
//   view                       arrays over memory the caller keeps (strides); transposed views
//   nn/pipeline_schedule       constexpr GPipe / 1F1B tables
//   nn/ffn_policy              FeedForward policies: its contractions planned, cost model (compile-time)
//   nn/feed_forward            the sharded FeedForward layer, forward and backward
//   nn/optimizer               SGD, Adam, gradient all-reduce over data-parallel replicas
//   nn/pipeline, nn/mlp        pipeline engine (point-to-point between stages), pipelined MLP
#pragma once

#if __cplusplus < 202002L
#error "shardwise needs C++20: compile with -std=c++20 or later (a pkg-config file cannot ask for it)"
#endif

#include "shardwise/version.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/comm/counting.hpp"
#include "shardwise/comm/mpi.hpp"
#include "shardwise/mpi_environment.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/parallel_context.hpp"
#include "shardwise/distributed_array.hpp"
#include "shardwise/sharded_matrix.hpp"
#include "shardwise/reshard.hpp"
#include "shardwise/matmul.hpp"
#include "shardwise/view.hpp"
#include "shardwise/plan/sharding_planner.hpp"
#include "shardwise/nn/pipeline_schedule.hpp"
#include "shardwise/nn/ffn_policy.hpp"
#include "shardwise/nn/sharded_activation.hpp"
#include "shardwise/nn/feed_forward.hpp"
#include "shardwise/nn/optimizer.hpp"
#include "shardwise/nn/pipeline.hpp"
#include "shardwise/nn/mlp.hpp"
