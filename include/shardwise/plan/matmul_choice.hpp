// shardwise/plan/matmul_choice.hpp: the matmul planner's question and answer as values:
// MatmulProblem (shape, scalar size, per-rank budget) and MatmulChoice (the shardings, the
// variant, the costs and the schedule plan_matmul returns), with the checks that refuse a problem
// or a mesh the planner cannot plan. The search itself is in matmul_search.hpp; the overview
// in sharding_planner.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "shardwise/layout.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/policy.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

/// A matmul for the planner: C[m, n] = A[m, k] B[k, n] of `shape`, scalars of `scalar_bytes`,
/// at most `budget_bytes` held per rank (the footprint model: blocks, gathered copies, buffers).
struct MatmulProblem {
  MatmulShape shape{};            ///< Global extents m, k, n.
  std::int64_t scalar_bytes = 8;  ///< Bytes per element (8: double).
  std::int64_t budget_bytes = std::numeric_limits<std::int64_t>::max();  ///< Per rank; no limit by default.
};

/// The planner's answer (see sharding_planner.hpp); `found` is false when no plan fits.
struct MatmulChoice {
  bool found = false;  ///< Whether a plan fits the budget; the other members are meaningful only then.
  /// A, B and C as stored: each element on one rank.
  ///@{
  detail::tensor_axes a{}, b{}, c{};
  ///@}
  /// What the product runs on, after AllGathers of minor axes.
  ///@{
  detail::tensor_axes kernel_a{}, kernel_b{};
  ///@}
  detail::VariantKind variant = detail::VariantKind::standard;  ///< How the product runs.
  detail::axis_list layers{};                  ///< 2.5D's layer axes
  int panel_width = 0;                         ///< SUMMA's and 2.5D's panel width
  Traffic traffic{};                           ///< sent by the busiest rank
  std::int64_t footprint_bytes = 0;            ///< held by the rank that holds the most
  detail::contraction_plan_data plan{};        ///< the schedule, from A and B as stored
};

namespace detail {

/// The panel width the planner gives SUMMA and 2.5D (variant::Summa<>'s default).
inline constexpr int planner_panel_width = variant::Summa<>::panel_width;

/// `v` in decimal, in a constant evaluation too (std::to_string is not constexpr).
constexpr std::string decimal(std::int64_t v) {
  std::string digits;
  const bool negative = v < 0;
  // Digit by digit from the remainder's magnitude, so that the most negative value does not overflow.
  do {
    const std::int64_t r = v % 10;
    digits.insert(digits.begin(), static_cast<char>('0' + (r < 0 ? -r : r)));
    v /= 10;
  } while (v != 0);
  if (negative) digits.insert(digits.begin(), '-');
  return digits;
}

/// Refuses a problem the planner cannot plan (std::invalid_argument naming `who`, the bad value
/// and the fix). In a constant evaluation the throw is the compile error, and the compilers
/// quote its line: each keeps its message on that line.
constexpr void check_matmul_problem(std::string_view who, const MatmulProblem& problem) {
  const std::pair<const char*, std::int64_t> extents[] = {
      {"m", problem.shape.m}, {"k", problem.shape.k}, {"n", problem.shape.n}};
  for (const auto& [name, extent] : extents)
    if (extent < 0) throw std::invalid_argument(std::string(who) + ": the extent " + name + " is " + decimal(extent) + "; give extents m, k and n of at least 0");
  if (problem.scalar_bytes < 1) throw std::invalid_argument(std::string(who) + ": scalar_bytes is " + decimal(problem.scalar_bytes) + "; give the bytes of one element, at least 1 (8 for double)");
  if (problem.budget_bytes < 0) throw std::invalid_argument(std::string(who) + ": budget_bytes is " + decimal(problem.budget_bytes) + "; give at least 0 bytes per rank (the default is no limit)");
}

/// Refuses a mesh the planner cannot plan on: more axes than max_mesh_axes, an extent below 1,
/// or more ranks than an int counts.
constexpr void check_planner_mesh(std::string_view who, const block_geometry& mesh) {
  if (mesh.ndim < 0 || mesh.ndim > static_cast<int>(max_mesh_axes)) throw std::invalid_argument(std::string(who) + ": the mesh has " + decimal(mesh.ndim) + " axes; give 0 to " + decimal(static_cast<std::int64_t>(max_mesh_axes)) + " axes (max_mesh_axes)");
  std::int64_t ranks = 1;
  for (int a = 0; a < mesh.ndim; ++a) {
    const int extent = mesh.extents[static_cast<std::size_t>(a)];
    if (extent < 1) throw std::invalid_argument(std::string(who) + ": mesh axis " + decimal(a) + " has extent " + decimal(extent) + "; give every axis an extent of at least 1");
    ranks *= extent;
    if (ranks > std::numeric_limits<int>::max()) throw std::invalid_argument(std::string(who) + ": the mesh has more than " + decimal(std::numeric_limits<int>::max()) + " ranks; give a mesh whose ranks an int counts");
  }
}
}  // namespace detail

}  // namespace shardwise
