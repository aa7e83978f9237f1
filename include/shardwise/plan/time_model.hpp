// shardwise/plan/time_model.hpp: how long a matmul plan takes on a machine (machine.hpp),
// read off the plan's steps as cost.hpp reads its bytes, for the busiest rank:
//   - a local GEMM: its 2mnk flops (the rank's blocks after the step) at the machine's rate;
//   - a collective (ring AllGather, ReduceScatter, AllReduce): its bytes (cost.hpp, the ring
//     algorithm's) over the link bandwidth plus one latency per message, one after the other;
//   - a ring variant: p - 1 exchanges overlapped with p GEMMs of a block each, the first GEMM
//     (or the last) alone: (p - 1) max(exchange, GEMM) + GEMM;
//   - SUMMA and 2.5D: per panel, A's broadcast, B's, then the panel's GEMM (the executor's
//     broadcasts are blocking); a broadcast on a binomial tree costs ceil(log2 p) times its
//     message, on a pipelined chain once plus the pipeline's fill (p - 2 segments);
//   - a slice: a local copy, nothing.
// Ranks a plan leaves idle are lost work by construction: its mesh's ranks multiply more each.
// Contention between messages on shared links is not modeled. Pure compile-time.
#pragma once

#include <algorithm>
#include <cstdint>

#include "shardwise/layout.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/evaluated_ranks.hpp"
#include "shardwise/plan/machine.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/plan/matmul_evaluation.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

/// The predicted time of a plan: that of its busiest rank, and of it the part spent in GEMMs.
struct PredictedTime {
  double seconds = 0;          ///< from the first step to the last
  double compute_seconds = 0;  ///< the GEMMs alone (the rest is communication not overlapped)
};

namespace detail {

constexpr double transfer_seconds(const Machine& machine, const Traffic& t) {
  return static_cast<double>(t.bytes) / machine.link_bytes_per_second +
         static_cast<double>(t.messages) * message_latency_seconds(machine);
}

/// One broadcast of `bytes` to a group of `group` ranks, along its critical path.
constexpr double broadcast_seconds(const Machine& machine, std::int64_t bytes, int group) {
  if (group <= 1 || bytes <= 0) return 0;
  const double latency = message_latency_seconds(machine);
  if (machine.broadcast == BroadcastAlgorithm::binomial_tree) {
    int rounds = 0;  // ceil(log2 group)
    while ((1 << rounds) < group) ++rounds;
    return rounds * (latency + static_cast<double>(bytes) / machine.link_bytes_per_second);
  }
  const std::int64_t segment = std::max<std::int64_t>(1, machine.chain_segment_bytes);
  const std::int64_t segments = (bytes + segment - 1) / segment;
  const double per_segment = latency + static_cast<double>(bytes) / static_cast<double>(segments) / machine.link_bytes_per_second;
  return static_cast<double>(segments + group - 2) * per_segment;
}

/// The flops of the local contraction a contracting step runs on this rank: its blocks of A
/// and B after the step (a ring AllGather's operand gathered) over the k it multiplies (SUMMA:
/// its layer's range).
constexpr double step_flops(const Step& step, const operand_axes& before, const operand_extents& global,
                            const block_geometry& geo) {
  operand_axes after = before;
  apply_step(step, after);
  const std::int64_t m = geo.extent(global[0][0], after[Operand::A].dim(0));
  const std::int64_t n = geo.extent(global[1][1], after[Operand::B].dim(1));
  std::int64_t k = 0;
  if (step.kind == StepKind::summa_gemm) {
    const k_range range = layer_k_range(step, global[0][1], geo);
    k = range.last - range.first;
  } else {
    k = geo.extent(global[0][1], after[Operand::A].dim(1));
  }
  return 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
}

/// SUMMA's (and 2.5D's) panels one after the other: A's broadcast, B's, the panel's GEMM.
constexpr PredictedTime summa_seconds(const Machine& machine, const Step& step, const operand_axes& state,
                                      const operand_extents& global, const block_geometry& geo,
                                      std::int64_t scalar_bytes, int panel_width) {
  const std::int64_t m_local = geo.extent(global[0][0], state[Operand::A].dim(0));
  const std::int64_t n_local = geo.extent(global[1][1], state[Operand::B].dim(1));
  const int a_group = geo.group_size(step.axes), b_group = geo.group_size(step.b_axes);
  const k_range range = layer_k_range(step, global[0][1], geo);
  PredictedTime t;
  for_each_summa_panel(
      global[0][1], a_group, b_group, panel_width,
      [&](const summa_panel& p) {
        t.seconds += broadcast_seconds(machine, m_local * p.width * scalar_bytes, a_group) +
                     broadcast_seconds(machine, p.width * n_local * scalar_bytes, b_group);
      },
      range.first, range.last);
  t.compute_seconds = 2.0 * static_cast<double>(m_local) * static_cast<double>(range.last - range.first) *
                      static_cast<double>(n_local) / machine.gemm_flops_per_second;
  t.seconds += t.compute_seconds;
  return t;
}

/// The time of `step` on the rank at `geo`, the shardings before it being `state`.
constexpr PredictedTime step_seconds(const Machine& machine, const Step& step, const operand_axes& state,
                                     const operand_extents& global, const block_geometry& geo,
                                     std::int64_t scalar_bytes, int panel_width) {
  switch (step.kind) {
    case StepKind::all_gather:
    case StepKind::reduce_scatter:
    case StepKind::all_reduce:
      return {transfer_seconds(machine, step_traffic(step, state, global, geo, scalar_bytes, panel_width)), 0};
    case StepKind::slice:
      return {};
    case StepKind::local_gemm: {
      const double gemm = step_flops(step, state, global, geo) / machine.gemm_flops_per_second;
      return {gemm, gemm};
    }
    case StepKind::ring_all_gather_gemm:
    case StepKind::ring_gemm_reduce_scatter: {
      const double gemm = step_flops(step, state, global, geo) / machine.gemm_flops_per_second;
      const int group = geo.group_size(step.axes);
      if (group <= 1) return {gemm, gemm};
      const double exchanges = transfer_seconds(machine, step_traffic(step, state, global, geo, scalar_bytes, panel_width));
      const double per_gemm = gemm / group, per_exchange = exchanges / (group - 1);
      return {(group - 1) * std::max(per_exchange, per_gemm) + per_gemm, gemm};
    }
    case StepKind::summa_gemm:
      return summa_seconds(machine, step, state, global, geo, scalar_bytes, panel_width);
  }
  return {};
}

/// The time of `steps` from `start` on the rank at `geo`: the steps one after the other.
constexpr PredictedTime schedule_seconds(const Machine& machine, const Schedule& steps, operand_axes state,
                                         const operand_extents& global, const block_geometry& geo,
                                         std::int64_t scalar_bytes, int panel_width) {
  PredictedTime total;
  for (const Step& step : steps) {
    const PredictedTime t = step_seconds(machine, step, state, global, geo, scalar_bytes, panel_width);
    total.seconds += t.seconds;
    total.compute_seconds += t.compute_seconds;
    apply_step(step, state);
  }
  return total;
}

}  // namespace detail

/// The predicted time of `choice` (a plan for `problem` on `mesh`) on `machine`: that of the
/// slowest of the ranks the planner evaluates (evaluated_ranks.hpp; where blocks divide evenly
/// every rank takes as long, and rank 0 is evaluated).
constexpr PredictedTime predicted_time(const Machine& machine, const detail::block_geometry& mesh,
                                       const MatmulProblem& problem, const MatmulChoice& choice) {
  using namespace detail;
  const operand_extents extents = matmul_extents(problem.shape);
  auto at = [&](const block_geometry& geo) {
    return schedule_seconds(machine, choice.plan.steps, choice.plan.start, extents, geo, problem.scalar_bytes,
                            choice.panel_width);
  };
  if (divides_evenly(mesh, problem.shape)) {
    block_geometry origin = mesh;
    origin.coordinate = {};
    return at(origin);
  }
  PredictedTime slowest;
  for_each_evaluated_rank(mesh, [&](const block_geometry& geo) {
    const PredictedTime t = at(geo);
    if (t.seconds > slowest.seconds) slowest = t;
  });
  return slowest;
}

}  // namespace shardwise
