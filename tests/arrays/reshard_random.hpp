// The randomized differential test of reshard schedules with slices: random tensors (1 to 3
// dimensions, uneven extents and empty ones included) on random meshes, a random source
// sharding (sometimes with a pending sum) and a target that keeps, drops minor axes of, or
// adds axes to each dimension. Cases whose target the reshard rule reaches are planned by
// reshard_steps and run by the executor as values (as sw::reshard does from types), then
// checked against the target's block of the global tensor, and the counted traffic against
// the model (a slice is 0 bytes). Both the virtual-cluster and the mpiexec tests draw from here.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "einsum/einsum_random.hpp"
#include "shardwise/plan/reshard.hpp"

namespace shardwise::testing {

/// One drawn reshard, as values.
struct ReshardCase {
  std::vector<int> mesh;  ///< extents of the mesh axes x, y, z (1 to 3 of them)
  detail::tensor_axes from{}, to{};
  detail::tensor_extents extents{};
  std::uint64_t seed = 0;

  [[nodiscard]] detail::reshard_result plan() const { return detail::reshard_steps(from, to); }
  [[nodiscard]] Schedule schedule() const {
    Schedule s;
    for (const Step& step : plan().steps) s.push_back(step);
    return s;
  }
  [[nodiscard]] bool slices() const {
    for (const Step& s : plan().steps)
      if (s.kind == StepKind::slice) return true;
    return false;
  }
  [[nodiscard]] std::string describe() const {
    static constexpr std::string_view names[] = {"x", "y", "z"};
    auto sharding = [&](const detail::tensor_axes& t) {
      std::string s = "[";
      for (int d = 0; d < t.rank; ++d) s += (d ? ", " : "") + detail::axes_text_of(t.dim(d), names);
      s += "]";
      if (!t.partial.empty()) s += "+P" + detail::axes_text_of(t.partial, names);
      return s;
    };
    std::ostringstream text;
    text << "mesh";
    for (int e : mesh) text << " " << e;
    text << ", extents";
    for (int d = 0; d < from.rank; ++d) text << (d ? "," : " ") << extents[static_cast<std::size_t>(d)];
    text << ", " << sharding(from) << " -> " << sharding(to);
    if (plan().error.ok()) text << ": " << detail::describe_schedule(schedule(), detail::reshard_names(from.rank), names);
    return text.str();
  }
};

/// Draws a case (its target may be unreachable: the caller draws again).
inline ReshardCase draw_reshard_case(std::mt19937_64& draw, const std::vector<std::vector<int>>& meshes = {}) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(draw); };
  ReshardCase c;
  if (!meshes.empty()) c.mesh = meshes[static_cast<std::size_t>(uniform(0, static_cast<int>(meshes.size()) - 1))];
  else if (const int ndim = uniform(1, 3); ndim == 1) c.mesh = {uniform(1, 4)};
  else if (ndim == 2) c.mesh = {uniform(1, 3), uniform(1, 2)};
  else c.mesh = {uniform(1, 2), uniform(1, 2), uniform(1, 2)};
  const int rank = uniform(1, 3);
  c.from.rank = c.to.rank = rank;
  std::vector<int> axes(c.mesh.size());
  for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(i);
  std::shuffle(axes.begin(), axes.end(), draw);
  // From: each axis splits a dimension, is pending (now and then) or is unused.
  for (int axis : axes) {
    const int choice = uniform(0, 5);
    if (choice <= 2) c.from.dim(uniform(0, rank - 1)).push_back(axis);
    else if (choice == 3) c.from.partial.push_back(axis);
  }
  c.from.partial = detail::in_mesh_order(c.from.partial);
  // To: each dimension keeps its axes or drops minor ones, then may add unused or pending axes.
  c.to = c.from;
  c.to.partial = {};
  for (int d = 0; d < rank; ++d) c.to.dim(d) = detail::without_tail(c.from.dim(d), static_cast<std::size_t>(uniform(0, 1)));
  std::shuffle(axes.begin(), axes.end(), draw);
  for (int axis : axes)
    if (!detail::contains(c.to.used(), axis) && uniform(0, 2) > 0) c.to.dim(uniform(0, rank - 1)).push_back(axis);
  for (int d = 0; d < rank; ++d)
    c.extents[static_cast<std::size_t>(d)] = uniform(0, 19) == 0 ? 0 : uniform(1, 7);
  c.seed = draw();
  return c;
}

/// What one rank saw running a case: the largest difference from the expected block and the
/// bytes sent against the model.
struct ReshardOutcome {
  double error = 0;
  Traffic measured, modeled;
};

/// Runs case `c` (whose target is reachable) on this rank of `groups`, counting into `counters`.
/// A pending sum is held by the ranks at coordinate 0 of the Partial axes (the others hold zeros).
template <typename M>
ReshardOutcome run_reshard_case(ProcessGroupMesh<M>& groups, const ReshardCase& c, const CommCounters& counters) {
  const detail::block_geometry geo = groups.geometry();
  const auto global = random_tensor<double>(c.extents, c.from.rank, c.seed);
  std::vector<double> in = block_of(global, c.from, c.extents, geo);
  for (int axis : c.from.partial)
    if (geo.coordinate[static_cast<std::size_t>(axis)] != 0) std::fill(in.begin(), in.end(), 0.0);
  const auto want = block_of(global, c.to, c.extents, geo);
  std::vector<double> out(want.size(), -1.0);
  detail::operand_axes state;
  state[Operand::C] = c.from;
  const Schedule steps = c.schedule();
  const auto order = detail::dim_order::row_major(c.from.rank);
  const detail::program p = detail::lower(steps, state, detail::reshard_indices(c.from.rank), 0, {}, {}, order, order);
  const detail::operand_extents e{{{}, {}, c.extents}};
  ReshardOutcome outcome;
  const Traffic before = counters.total();
  detail::executor<double, false>(p, groups.state(), e, {nullptr, nullptr, in.data(), out.data()}).run();
  outcome.measured = counters.total() - before;
  outcome.modeled = detail::schedule_traffic(steps, state, e, geo, sizeof(double), 0);
  for (std::size_t i = 0; i < want.size(); ++i) outcome.error = std::max(outcome.error, std::abs(out[i] - want[i]));
  return outcome;
}

}  // namespace shardwise::testing
