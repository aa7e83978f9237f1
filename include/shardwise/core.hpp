// shardwise/core.hpp: what a numerical code includes: the arrays and the operations on them,
// without the nn/ layers and without the sharding planner (plan_matmul and its search).
//
//   arrays and views   DistributedArray, ShardedMatrix, ShardedTensor (Eigen's Tensor module),
//                      views of the caller's memory, transposed / permuted / adjoint
//   operations         matmul, matmul_into, gemm (alpha, beta), einsum, reshard, reduce;
//                      linalg: dot, axpy, scale, norm, matvec, elementwise
//   communicators      comm/ backends (MPI, counting; AnyCommunicator), MpiEnvironment,
//                      ProcessGroupMesh, ParallelContext
//   plans              matmul and reshard plans as types, policies, cost model, describe()
//
// Left out, each one more include: the sharding planner (shardwise/plan/sharding_planner.hpp:
// plan_matmul, plan_matmul_any_mesh, planned_matmul), the nn/ layers (FeedForward, optimizers,
// pipelines), the virtual cluster (shardwise/comm/virtual_cluster.hpp) and ScaLAPACK interop
// (shardwise/scalapack/). shardwise/shardwise.hpp is matrices with the planner and nn/;
// shardwise/tensor.hpp is everything (this header's tensors and linalg with shardwise.hpp).
// A test (tests/check_core.py) checks that nothing here includes nn/ or the planner.
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
#include "shardwise/sharded_tensor.hpp"
#include "shardwise/reshard.hpp"
#include "shardwise/matmul.hpp"
#include "shardwise/view.hpp"
#include "shardwise/einsum.hpp"
#include "shardwise/linalg.hpp"
