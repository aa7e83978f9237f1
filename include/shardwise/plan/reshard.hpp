// shardwise/plan/reshard.hpp: from one sharding of a tensor to another, without a reshuffle.
//
// Each dimension may keep its axes, drop minor ones (AllGather), or gain minor axes: axes the
// tensor does not use yet (a slice: each rank keeps its part of its block, no communication),
// then pending ones (ReduceScatter); pending axes neither kept nor scattered are AllReduced.
// Anything else would move blocks between ranks that do not already share them (an
// all-to-all), which shardwise never does silently: it is a compile error. The same rule
// finishes every contraction (contraction.hpp). Pure compile-time.
#pragma once

#include <string>

#include "shardwise/detail/static_vector.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/describe.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/sharding.hpp"

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
  static_assert(!From::is_block_cyclic && !To::is_block_cyclic,
                "shardwise::reshard_plan: the steps are for block shardings; an array goes to or from a "
                "BlockCyclic sharding by a redistribution, which sw::reshard runs (its bytes: sw::reshard_traffic)");
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

}  // namespace shardwise
