// shardwise/plan/sharding_planner.hpp: the cheapest shardings for a matmul, and the cheapest
// way from one sharding to another, as constexpr functions.
//
//   constexpr sw::MatmulProblem problem{{.m = 4096, .k = 4096, .n = 4096}, sizeof(double), 4ll << 30};
//   const sw::MatmulChoice best = sw::plan_matmul(Grid{}, problem);   // or in a constexpr context
//   best.a, best.b, best.c         // how to store A, B and C: each element on one rank
//   best.kernel_a, best.kernel_b   // what the product runs on, after AllGathers of minor axes
//   best.variant, best.layers      // standard, ring, SUMMA or 2.5D (over the layer axes)
//   best.traffic, best.footprint_bytes
//   using P = sw::planned_matmul<Grid, best_as_a_constexpr_variable>;  // the same as types
//
// The matmul planner searches every plan the library can run on operands stored once (each
// element of A, B and C on exactly one rank, the setting of the communication lower bounds,
// of ScaLAPACK and of COSMA): for each mesh axis, the dimension of A it splits in the kernel
// (m, k or none) and the one of B (k, n or none); A and B are stored as their kernel layouts
// with the axes they replicate over appended, in mesh order, to their last dimension (so the
// kernel's copies are AllGathers of minor axes, which the plan counts); the variants standard,
// ring, SUMMA, and 2.5D over every non-empty set of axes that neither A nor B uses; and every
// C stored once (each axis splitting its rows or its columns, in any order) that the plan
// reaches. Among the plans whose
// footprint fits the budget it returns the one with the fewest bytes sent by the busiest rank
// (then fewest messages, then smallest footprint). Replicated inputs are not offered: they
// would make any product free of communication and need the memory of whole operands.
//
// Costs are the plans' own cost model, evaluated on every rank of a mesh of at most 64 ranks
// and, beyond, on the ranks whose coordinates are 0, 1, the middle or one of the last two on
// every axis (where extents divide evenly, every rank sends and holds as much as one of
// those). The reshard planner (cheapest_reshard) is a shortest path over placements, so its
// costs satisfy the triangle inequality by construction (tests check both exhaustively on
// small meshes).
//
// The planner, one job a header:
//   matmul_choice.hpp      MatmulProblem and MatmulChoice: the question and the answer
//   evaluated_ranks.hpp    the ranks whose costs the planners evaluate
//   matmul_evaluation.hpp  the cost of one plan (evaluate_matmul) and the order of choices
//   matmul_kernels.hpp     the kernels searched (for_each_kernel) and their bounds
//   matmul_outputs.hpp     a kernel's plans, one per output layout, costed without a schedule
//   matmul_search.hpp      plan_matmul: the branch-and-bound search
//   matmul_any_mesh.hpp    plan_matmul_any_mesh, meshes_of, AnyMeshOptions: the mesh as a choice
//   matmul_by_time.hpp     plan_matmul_by_time: on one mesh, the plan of least predicted time
//   machine.hpp            Machine: GEMM rate, links, broadcast algorithm (the simulated ones named)
//   time_model.hpp         predicted_time: a plan's time on a machine, from its steps (the
//                          planners minimize it given AnyMeshOptions::machine, and
//                          plan_matmul_by_time)
//   planned_matmul.hpp     planned_matmul<M, choice>: a choice as types
//   reshard.hpp            cheapest_reshard: the cheapest path between two placements
#pragma once

#include "shardwise/plan/evaluated_ranks.hpp"
#include "shardwise/plan/machine.hpp"
#include "shardwise/plan/matmul_any_mesh.hpp"
#include "shardwise/plan/matmul_by_time.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/plan/matmul_evaluation.hpp"
#include "shardwise/plan/matmul_kernels.hpp"
#include "shardwise/plan/matmul_outputs.hpp"
#include "shardwise/plan/matmul_search.hpp"
#include "shardwise/plan/planned_matmul.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/plan/time_model.hpp"
