// shardwise/plan/matmul_evaluation.hpp: the cost of one matmul plan, as the planner ranks plans:
// evaluate_matmul runs the cost model (cost.hpp) on a plan's schedule over the evaluated ranks
// (evaluated_ranks.hpp), with SUMMA's busiest rank in closed form where blocks divide evenly
// (cost.hpp's summa_busiest), and `cheaper` orders two choices. Implementation details of plan_matmul (matmul_search.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "shardwise/detail/partition.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/evaluated_ranks.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

namespace detail {

/// Whether every rank of `mesh` holds blocks of the same size for a product of `shape`: each
/// of m, k and n is a multiple of the number of ranks (every group size divides it). Then every
/// step but SUMMA's broadcasts sends and holds as much on every rank (an AllReduce's chunks too:
/// its group's size divides the block), and SUMMA's differ only by the group ranks along A's and
/// B's panel axes and the layer (summa_busiest).
constexpr bool divides_evenly(const block_geometry& mesh, const MatmulShape& shape) {
  std::int64_t ranks = 1;
  for (int a = 0; a < mesh.ndim; ++a) ranks *= mesh.extents[static_cast<std::size_t>(a)];
  return shape.m % ranks == 0 && shape.k % ranks == 0 && shape.n % ranks == 0;
}

/// The fewest messages a rank sends in the broadcasts of a SUMMA kernel (A's panels over groups
/// of `a_group`, B's over `b_group`, each of `layers` layers over its share of k): in a layer, a
/// rank sends every panel but those of the root after it, so at least the panels of the layer
/// but those of the root with the most.
constexpr std::int64_t summa_fewest_messages(std::int64_t k, int a_group, int b_group, int layers) {
  std::int64_t fewest = -1;
  for (int layer = 0; layer < layers; ++layer) {
    std::int64_t panels = 0, a_most = 0, b_most = 0, a_run = 0, b_run = 0;
    int a_root = -1, b_root = -1;
    for_each_summa_panel(
        k, a_group, b_group, planner_panel_width,
        [&](const summa_panel& p) {
          ++panels;
          a_run = p.a_root == a_root ? a_run + 1 : 1, a_root = p.a_root, a_most = std::max(a_most, a_run);
          b_run = p.b_root == b_root ? b_run + 1 : 1, b_root = p.b_root, b_most = std::max(b_most, b_run);
        },
        block_begin(k, layers, layer), block_begin(k, layers, layer + 1));
    const std::int64_t here = (a_group > 1 ? panels - a_most : 0) + (b_group > 1 ? panels - b_most : 0);
    fewest = fewest < 0 ? here : std::min(fewest, here);
  }
  return std::max<std::int64_t>(fewest, 0);
}

/// The choice for stored layouts a, b, c, kernel layouts ka, kb and a variant, with its costs;
/// `found` false when it does not plan, and `fits` false when it exceeds the budget. Costs are
/// the model's on every rank of a mesh of at most 64 ranks and on the representative ranks of a
/// larger one (for_each_evaluated_rank); when blocks divide evenly (divides_evenly), every rank
/// sends and holds as much as rank 0 but in SUMMA's broadcasts (summa_busiest), and rank 0 is
/// the one evaluated, unless `every_rank`. Given a found `rival`, the walk over ranks stops as
/// soon as some rank sends more bytes than the rival's busiest one (the choice could not be
/// cheaper; it is then not `fits`, and its costs are partial), and as soon as some rank holds
/// more than the budget: the search skips most of its candidates this way.
struct evaluated_choice {
  MatmulChoice choice{};
  bool plans = false, fits = false;
};
constexpr evaluated_choice evaluate_matmul(const block_geometry& mesh, const MatmulProblem& problem,
                                           const tensor_axes& a, const tensor_axes& b, const tensor_axes& ka,
                                           const tensor_axes& kb, const tensor_axes& c, VariantKind variant,
                                           const axis_list& layers, const MatmulChoice* rival = nullptr,
                                           bool every_rank = false) {
  evaluated_choice e;
  MatmulChoice& m = e.choice;
  m.plan = plan_contraction_via(matmul_indices, a, b, ka, kb, c, false, variant, layers);
  if (!m.plan.error.ok()) return e;
  e.plans = true;
  m.a = a, m.b = b, m.c = c, m.kernel_a = ka, m.kernel_b = kb, m.variant = variant, m.layers = layers;
  m.panel_width = variant == VariantKind::summa || variant == VariantKind::summa_25d ? planner_panel_width : 0;
  const operand_extents extents = matmul_extents(problem.shape);
  const bool against_rival = rival != nullptr && rival->found;
  if (!every_rank && divides_evenly(mesh, problem.shape)) {
    block_geometry origin = mesh;
    origin.coordinate = {};
    operand_axes state = m.plan.start;
    for (const Step& step : m.plan.steps) {
      m.traffic += step.kind == StepKind::summa_gemm
                       ? summa_busiest(step, state, extents, origin, problem.scalar_bytes, m.panel_width)
                       : step_traffic(step, state, extents, origin, problem.scalar_bytes, m.panel_width);
      apply_step(step, state);
    }
    if (against_rival && m.traffic.bytes > rival->traffic.bytes) return e;
    m.footprint_bytes = problem.scalar_bytes * matmul_footprint(m.plan.steps, m.plan.start, c, extents, origin,
                                                                  m.panel_width);
    e.fits = m.footprint_bytes <= problem.budget_bytes;
    m.found = e.fits;
    return e;
  }
  bool outdone = false;
  for_each_evaluated_rank(mesh, [&](const block_geometry& geo) {
    const Traffic t = schedule_traffic(m.plan.steps, m.plan.start, extents, geo, problem.scalar_bytes, m.panel_width);
    m.traffic = std::max(m.traffic, t);
    if (against_rival && m.traffic.bytes > rival->traffic.bytes) {
      outdone = true;
      return false;
    }
    const std::int64_t held = problem.scalar_bytes * matmul_footprint(m.plan.steps, m.plan.start, c, extents, geo,
                                                                        m.panel_width);
    if (held > m.footprint_bytes) m.footprint_bytes = held;
    if (held > problem.budget_bytes) {
      outdone = true;
      return false;
    }
    return true;
  });
  e.fits = !outdone && m.footprint_bytes <= problem.budget_bytes;
  m.found = e.fits;
  return e;
}

/// Whether x is cheaper than y: fewer bytes from the busiest rank, then fewer messages, then a
/// smaller footprint.
constexpr bool cheaper(const MatmulChoice& x, const MatmulChoice& y) {
  if (x.traffic != y.traffic) return x.traffic < y.traffic;
  return x.footprint_bytes < y.footprint_bytes;
}

}  // namespace detail

}  // namespace shardwise
