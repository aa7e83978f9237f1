// shardwise/plan/reshard.hpp: from one sharding of a tensor to another, without a reshuffle.
//
// Each dimension may keep its axes, drop minor ones (AllGather), or gain minor axes: axes the
// tensor does not use yet (a slice: each rank keeps its part of its block, no communication),
// then pending ones (ReduceScatter); pending axes neither kept nor scattered are AllReduced.
// Anything else would move blocks between ranks that do not already share them (an
// all-to-all), which shardwise never does silently: it is a compile error. The same rule
// finishes every contraction (contraction.hpp).
//
// cheapest_reshard, at the end, is the reshard planner: the cheapest path from one placement
// to another (Dijkstra over placements, the busiest rank's bytes per step), so its costs satisfy
// the triangle inequality by construction. Pure compile-time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "shardwise/detail/static_vector.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/describe.hpp"
#include "shardwise/plan/evaluated_ranks.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

namespace detail {

/// Why a plan cannot be made; the plan types turn each into a static_assert message.
enum class PlanError {
  none,
  same_axis_splits_two_output_dims,  ///< one mesh axis would split two dimensions of the result
  output_partial_not_pending,        ///< the requested Partial names an axis nothing leaves pending
  output_dim_unreachable,            ///< a requested dimension cannot be reached without a reshuffle
  ring_needs_one_gather_or_scatter,  ///< the ring variant has nothing (or too much) to overlap
  summa_needs_grid_layout,           ///< SUMMA needs A = [X, Y] and B = [X, Y]
  summa_25d_layers_split_inputs,     ///< 2.5D's layer axes must replicate A and B, not split them
  kernel_layout_unreachable,         ///< via<KA, KB>: KA or KB is not A or B with minor axes gathered
};

/// A plan's verdict: no error, or the error and the dimension of the result it concerns (-1
/// when none) and, for two dimensions split by one axis, the other dimension and the axis.
struct plan_error {
  PlanError code = PlanError::none;
  int dim = -1, other_dim = -1, axis = -1;
  [[nodiscard]] constexpr bool ok() const { return code == PlanError::none; }
};

struct reshard_result {
  static_vector<Step, 3 * max_tensor_rank + 1> steps;
  plan_error error;
};

/// The steps that take C from `have` to `want` (see the top of this file): slices first (they
/// shrink what the collectives move and need no axis a collective frees), ReduceScatters in
/// dimension order, then one AllReduce, then AllGathers from the last dimension to the first
/// (for a column-major matrix the column gather then moves contiguous blocks).
constexpr reshard_result reshard_steps(const tensor_axes& have, const tensor_axes& want) {
  reshard_result result;
  if (!is_subset(want.partial, have.partial)) {
    result.error = {PlanError::output_partial_not_pending};
    return result;
  }
  const axis_list reduce = without(have.partial, want.partial);
  const axis_list used = have.used();
  std::array<axis_list, max_tensor_rank> gather{}, slice{}, scatter{};
  axis_list scattered;
  for (int d = 0; d < have.rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (is_prefix(want.dim(d), have.dim(d))) {
      gather[i] = tail(have.dim(d), want.dim(d).size());
      continue;
    }
    // More axes: the new ones are axes nothing uses yet (a slice: each rank keeps its part),
    // then pending ones (a ReduceScatter), in that order. An axis that splits another dimension
    // now would have to travel there: a reshuffle, never done silently.
    const axis_list extra = tail(want.dim(d), have.dim(d).size());
    std::size_t sliced = 0;
    while (sliced < extra.size() && !contains(reduce, extra[sliced]) && !contains(used, extra[sliced])) ++sliced;
    slice[i] = without_tail(extra, extra.size() - sliced);
    scatter[i] = tail(extra, sliced);
    if (!is_prefix(have.dim(d), want.dim(d)) || !is_subset(scatter[i], reduce)) {
      result.error = {PlanError::output_dim_unreachable, d};
      return result;
    }
    scattered = concat(scattered, scatter[i]);
  }
  for (int d = 0; d < have.rank; ++d)
    if (!slice[static_cast<std::size_t>(d)].empty())
      result.steps.push_back({StepKind::slice, Operand::C, d, slice[static_cast<std::size_t>(d)], {}});
  for (int d = 0; d < have.rank; ++d)
    if (!scatter[static_cast<std::size_t>(d)].empty())
      result.steps.push_back({StepKind::reduce_scatter, Operand::C, d, scatter[static_cast<std::size_t>(d)], {}});
  const axis_list all_reduce = without(reduce, scattered);
  if (!all_reduce.empty()) result.steps.push_back({StepKind::all_reduce, Operand::C, -1, all_reduce, {}});
  for (int d = have.rank; d-- > 0;)
    if (!gather[static_cast<std::size_t>(d)].empty())
      result.steps.push_back({StepKind::all_gather, Operand::C, d, gather[static_cast<std::size_t>(d)], {}});
  return result;
}

/// The names a reshard's description uses for a tensor of `rank` dimensions: C and, for a
/// matrix, m and n (as the matmul that finishes with the same steps); beyond that i, j, ...
constexpr plan_names reshard_names(int rank) {
  plan_names names = matmul_names;
  if (rank != 2)
    for (int d = 0; d < rank; ++d) names.dims[2][static_cast<std::size_t>(d)] = static_cast<char>('i' + d);
  return names;
}

}  // namespace detail

/// Changing a tensor's sharding without a contraction: reduce a Partial (AllReduce),
/// ReduceScatter it into a dimension, gather minor axes, or slice a dimension over axes the
/// tensor does not use yet (see the top of this file).
/// Anything else does not compile.
template <MeshType M, TensorShardingType From, TensorShardingType To>
struct reshard_plan {
 private:
  static_assert(From::rank == To::rank, "shardwise::reshard: the target sharding has another number of dimensions "
                                        "than the source; a reshard keeps the tensor's shape");
  static_assert(!From::is_redistributed && !To::is_redistributed,
                "shardwise::reshard_plan: the steps are for block shardings; an array goes to or from a "
                "BlockCyclic or SplitFirstLarger sharding by a redistribution, which sw::reshard runs (its bytes: "
                "sw::reshard_traffic)");
  static constexpr bool valid = detail::checked_sharding<M, From, From::rank>::value &&
                                detail::checked_sharding<M, To, To::rank>::value;
  static constexpr detail::tensor_axes from_axes = [] {
    if constexpr (valid) return detail::tensor_axes::of(detail::resolve_sharding<M, From>());
    else return detail::tensor_axes{};
  }();
  static constexpr detail::reshard_result data = [] {
    if constexpr (valid)
      return detail::reshard_steps(from_axes, detail::tensor_axes::of(detail::resolve_sharding<M, To>()));
    else
      return detail::reshard_result{};
  }();
  static_assert(data.error.code != detail::PlanError::output_partial_not_pending,
                "shardwise::reshard: the target is Partial over an axis the source has no pending sum over");
  static_assert(data.error.code != detail::PlanError::output_dim_unreachable,
                "shardwise::reshard: the target sharding cannot be reached: each dimension may keep its axes, "
                "drop minor ones (AllGather), or add minor ones: axes the tensor does not use yet (a slice, no "
                "communication), then pending Partial axes (ReduceScatter)");

 public:
  /// The steps, all on C (the tensor being resharded).
  static constexpr Schedule schedule = [] {
    Schedule s;
    for (const Step& step : data.steps) s.push_back(step);
    return s;
  }();
  /// The shardings before the first step: C as given.
  static constexpr detail::operand_axes initial_state() {
    detail::operand_axes state;
    state[Operand::C] = from_axes;
    return state;
  }

  /// Bytes and messages the rank at `coordinate` sends, for a tensor of global `extents`.
  static constexpr Traffic traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                   const detail::tensor_extents& extents, std::int64_t scalar_bytes) {
    return detail::schedule_traffic(schedule, initial_state(), {{{}, {}, extents}},
                                    detail::block_geometry(mesh, coordinate), scalar_bytes, 0);
  }
  /// The same for a matrix of `rows` x `cols`.
  static constexpr Traffic traffic(const M& mesh, const typename M::coordinate_type& coordinate, std::int64_t rows,
                                   std::int64_t cols, std::int64_t scalar_bytes) {
    return traffic(mesh, coordinate, detail::tensor_extents{rows, cols}, scalar_bytes);
  }

  /// "AllReduce C over y => [x, -]", or "no communication".
  static std::string describe() {
    return schedule.empty() ? std::string("no communication")
                            : detail::cat(detail::describe_schedule(schedule, detail::reshard_names(From::rank), M::names),
                                          " => ", To::to_string());
  }
};

// ---- the cheapest way from one sharding to another -------------------------------------------

/// One hop of a reshard path: the placement it reaches and its step (a slice, which only
/// keeps a smaller block and sends nothing, has kind all_gather with `slice` set).
struct ReshardHop {
  detail::tensor_axes placement{};  ///< The sharding after this hop.
  Step step{};                      ///< The collective that gets there.
  bool slice = false;               ///< A slice: the block shrinks locally, nothing is sent.
  Traffic traffic{};                ///< What the busiest rank sends in this hop.
};

/// The cheapest path between two placements: its hops, and their total for the busiest rank.
struct ReshardPath {
  bool found = false;                             ///< Whether `to` is reachable; if not, the path is empty.
  detail::static_vector<ReshardHop, 12> hops{};  ///< The hops, in order.
  Traffic traffic{};                              ///< Their total for the busiest rank.
};

namespace detail {

/// The most placements cheapest_reshard visits (a matrix on three axes has fewer than 400).
inline constexpr int reshard_node_limit = 512;

/// Calls f(next, step, slice) for every single step out of `t` (see cheapest_reshard).
template <typename F>
constexpr void for_each_reshard_step(const tensor_axes& t, int mesh_axes, F&& f) {
  const axis_list used = t.used();
  for (int d = 0; d < t.rank; ++d) {
    // AllGather of the last k axes of the dimension.
    for (std::size_t k = 1; k <= t.dim(d).size(); ++k) {
      tensor_axes next = t;
      next.dim(d) = without_tail(t.dim(d), k);
      f(next, Step{StepKind::all_gather, Operand::C, d, tail(t.dim(d), t.dim(d).size() - k), {}}, false);
    }
    // ReduceScatter of one pending axis into the dimension (more: one after another).
    for (int axis : t.partial) {
      tensor_axes next = t;
      next.dim(d).push_back(axis);
      next.partial = without(t.partial, {axis});
      f(next, Step{StepKind::reduce_scatter, Operand::C, d, {axis}, {}}, false);
    }
    // Slice: keep this rank's part along an axis nothing uses yet (no communication).
    for (int axis = 0; axis < mesh_axes; ++axis) {
      if (contains(used, axis)) continue;
      tensor_axes next = t;
      next.dim(d).push_back(axis);
      f(next, Step{StepKind::all_gather, Operand::C, d, {axis}, {}}, true);
    }
  }
  // AllReduce of all pending axes, or of one of them.
  if (!t.partial.empty()) {
    tensor_axes next = t;
    next.partial = {};
    f(next, Step{StepKind::all_reduce, Operand::C, -1, t.partial, {}}, false);
  }
  if (t.partial.size() > 1)
    for (int axis : t.partial) {
      tensor_axes next = t;
      next.partial = without(t.partial, {axis});
      f(next, Step{StepKind::all_reduce, Operand::C, -1, {axis}, {}}, false);
    }
}

constexpr Traffic reshard_step_traffic(const Step& step, bool slice, const tensor_axes& from,
                                       const block_geometry& mesh, const tensor_extents& extents,
                                       std::int64_t scalar_bytes) {
  if (slice) return {};
  operand_axes state;
  state[Operand::C] = from;
  Traffic worst;
  for_each_evaluated_rank(mesh, [&](const block_geometry& geo) {
    const Traffic t = step_traffic(step, state, {{{}, {}, extents}}, geo, scalar_bytes, 0);
    worst = std::max(worst, t);
  });
  return worst;
}

}  // namespace detail

/// The cheapest path from placement `from` to placement `to` of a tensor of global `extents`
/// on `mesh` (Dijkstra over placements; each step an AllGather of minor axes, a ReduceScatter
/// or an AllReduce of pending axes, or a slice that only keeps a smaller block). The cost of a
/// step is what the busiest rank sends in it; a path's cost, the sum over its steps.
constexpr ReshardPath cheapest_reshard(const detail::block_geometry& mesh, const detail::tensor_axes& from,
                                       const detail::tensor_axes& to, const detail::tensor_extents& extents,
                                       std::int64_t scalar_bytes) {
  using namespace detail;
  struct node {
    tensor_axes placement{};
    Traffic distance{};
    int previous = -1;
    ReshardHop hop{};
    bool done = false;
  };
  static_vector<node, reshard_node_limit> nodes;
  auto find = [&](const tensor_axes& t) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].placement == t) return static_cast<int>(i);
    return -1;
  };
  nodes.push_back({from, {}, -1, {}, false});
  ReshardPath path;
  for (;;) {
    int current = -1;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (!nodes[i].done && (current < 0 || nodes[i].distance < nodes[static_cast<std::size_t>(current)].distance))
        current = static_cast<int>(i);
    if (current < 0) return path;  // unreachable
    nodes[static_cast<std::size_t>(current)].done = true;
    const tensor_axes here = nodes[static_cast<std::size_t>(current)].placement;
    if (here == to) break;
    const Traffic base = nodes[static_cast<std::size_t>(current)].distance;
    for_each_reshard_step(here, mesh.ndim, [&](const tensor_axes& next, const Step& step, bool slice) {
      const Traffic cost = reshard_step_traffic(step, slice, here, mesh, extents, scalar_bytes);
      const Traffic total = base + cost;
      int i = find(next);
      if (i < 0) {
        nodes.push_back({next, total, current, {next, step, slice, cost}, false});
      } else if (!nodes[static_cast<std::size_t>(i)].done && total < nodes[static_cast<std::size_t>(i)].distance) {
        nodes[static_cast<std::size_t>(i)].distance = total;
        nodes[static_cast<std::size_t>(i)].previous = current;
        nodes[static_cast<std::size_t>(i)].hop = {next, step, slice, cost};
      }
    });
  }
  const int end = find(to);
  path.found = true;
  path.traffic = nodes[static_cast<std::size_t>(end)].distance;
  static_vector<ReshardHop, 12> reversed;
  for (int i = end; nodes[static_cast<std::size_t>(i)].previous >= 0; i = nodes[static_cast<std::size_t>(i)].previous)
    reversed.push_back(nodes[static_cast<std::size_t>(i)].hop);
  for (std::size_t i = reversed.size(); i-- > 0;) path.hops.push_back(reversed[i]);
  return path;
}

}  // namespace shardwise
