// shardwise/plan/memory_budget.hpp: a per-rank memory budget that a matmul's plan must fit,
// checked at compile time.
//
//   constexpr sw::MatmulShape shape{.m = 32768, .k = 32768, .n = 32768};
//   auto c = sw::matmul(a, b, sw::summa_25d<"z">, sw::memory_budget<shape, 4ll << 30>);
//
// The footprint is the plan's model (matmul_plan::footprint_bytes: this rank's blocks of A, B
// and C, gathered copies, buffers) for the shape given, on the rank that holds the most. A plan
// over the budget is a compile error whose message says so, with the footprint, the budget and
// a variant of the same shardings that fits (or the planner to ask) beside it. The mesh must
// be static (every extent in the type): the check needs its extents. At run time matmul
// checks that the operands have the shape the budget was checked for. Pure compile-time.
#pragma once

#include <cstdint>

#include "shardwise/detail/diagnostic_note.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/evaluated_ranks.hpp"  // for_each_evaluated_rank: not the whole planner
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/policy.hpp"

namespace shardwise {

/// A per-rank memory budget of `Bytes` for a matmul of shape `Shape` (see the top of this file).
template <MatmulShape Shape, std::int64_t Bytes>
struct MemoryBudget {
  static_assert(Bytes > 0, "shardwise::MemoryBudget: the budget must be a positive number of bytes");
  static constexpr MatmulShape shape = Shape;   ///< The global shape of the matmul.
  static constexpr std::int64_t bytes = Bytes;  ///< What one rank may hold during it.
};

/// The budget as a call argument: matmul(a, b, variant, sw::memory_budget<shape, bytes>).
template <MatmulShape Shape, std::int64_t Bytes>
inline constexpr MemoryBudget<Shape, Bytes> memory_budget{};

namespace detail {

template <typename T>
inline constexpr bool is_memory_budget_v = false;
template <MatmulShape Shape, std::int64_t Bytes>
inline constexpr bool is_memory_budget_v<MemoryBudget<Shape, Bytes>> = true;

/// "768 MiB", "1.5 GiB", "12 KiB", "100 B": a byte count for a note.
constexpr diagnostic_note& add_bytes(diagnostic_note& note, std::int64_t bytes) {
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  std::int64_t whole = bytes, tenths = 0;
  while (whole >= 1024 && unit < 4) {
    tenths = (whole % 1024) * 10 / 1024;
    whole /= 1024;
    ++unit;
  }
  note.add_number(whole);
  if (tenths != 0 && whole < 100) note.add('.').add_number(tenths);
  return note.add(' ').add(units[unit]);
}

/// The footprint of a plan on the rank that holds the most (the planner's evaluated ranks).
template <MeshType M, typename Plan>
constexpr std::int64_t largest_footprint(MatmulShape shape, std::int64_t scalar_bytes) {
  std::int64_t most = 0;
  const M mesh{};
  for_each_evaluated_rank(block_geometry(mesh, typename M::coordinate_type{}), [&](const block_geometry& geo) {
    typename M::coordinate_type at{};
    for (std::size_t a = 0; a < M::ndim; ++a) at[a] = geo.coordinate[a];
    const std::int64_t held = Plan::footprint_bytes(mesh, at, shape, scalar_bytes);
    if (held > most) most = held;
  });
  return most;
}

/// A candidate variant that fits, and its footprint.
struct budget_suggestion {
  diagnostic_note note{};
  std::int64_t bytes = -1;
};

/// Among the variants of the same shardings (standard, ring, SUMMA, 2.5D over an axis that
/// neither A nor B uses), the one that fits with the fewest bytes sent; or, when none fits,
/// a pointer to the planner.
template <MeshType M, typename ShA, typename ShB, typename ShC, typename Budget, std::int64_t ScalarBytes>
struct budget_suggestions {
  static constexpr MatmulShape shape = Budget::shape;
  budget_suggestion best{};
  std::int64_t best_traffic = -1;

  template <typename V>
  constexpr void consider(std::string_view name) {
    if constexpr (valid_matmul<M, ShA, ShB, ShC, V>) {
      using Plan = matmul_plan<M, ShA, ShB, ShC, V>;
      const std::int64_t held = largest_footprint<M, Plan>(shape, ScalarBytes);
      const std::int64_t sent = Plan::max_traffic(M{}, shape, ScalarBytes).bytes;
      if (held <= Budget::bytes && (best_traffic < 0 || sent < best_traffic)) {
        best_traffic = sent;
        best.bytes = held;
        best.note = diagnostic_note("fits: ");
        best.note.add(name).add(", ");
        add_bytes(best.note, held);
      }
    }
  }
  template <std::size_t... I>
  constexpr void consider_layers(std::index_sequence<I...>) {
    (consider<variant::Summa25D<M::template axis_type<I>::fixed_name>>("summa_25d"), ...);
  }
  static constexpr budget_suggestion find() {
    budget_suggestions s;
    s.template consider<variant::Standard>("standard");
    s.template consider<variant::Ring>("ring");
    s.template consider<variant::Summa<>>("summa");
    s.consider_layers(std::make_index_sequence<M::ndim>{});
    if (s.best.bytes < 0) s.best.note = diagnostic_note("none fits: ask sw::plan_matmul");
    return s.best;
  }
};

/// The static_assert of a budget, with the footprint, the budget and a suggestion beside it.
template <bool Fits, auto Footprint, auto Budget, auto Suggestion>
struct budget_report {
  static_assert(Fits || named_beside<Footprint, Budget, Suggestion>,
                "shardwise::matmul: the plan's footprint per rank exceeds the memory budget (the footprint, the "
                "budget and a variant of the same shardings that fits are named beside this message); use that "
                "variant, shard A and B over more axes (sw::plan_matmul finds the cheapest plan that fits), or "
                "raise the budget");
};

/// The compile-time check of a budget (completed by matmul's budget overload).
template <MeshType M, typename ShA, typename ShB, typename ShC, typename Variant, typename Budget, std::int64_t ScalarBytes>
struct checked_budget {
  static_assert(M::is_static,
                "shardwise::matmul: a memory budget is checked at compile time, so the mesh must be static (every "
                "Axis<name, extent> with its extent in the type)");
  static constexpr bool checkable = M::is_static && valid_matmul<M, ShA, ShB, ShC, Variant>;
  static constexpr std::int64_t footprint = [] {
    if constexpr (checkable) return largest_footprint<M, matmul_plan<M, ShA, ShB, ShC, Variant>>(Budget::shape, ScalarBytes);
    else return std::int64_t{0};
  }();
  static constexpr bool fits = footprint <= Budget::bytes;

  static constexpr diagnostic_note footprint_note = [] {
    diagnostic_note n("footprint ");
    return add_bytes(n, footprint);
  }();
  static constexpr diagnostic_note budget_note = [] {
    diagnostic_note n("budget ");
    return add_bytes(n, Budget::bytes);
  }();
  static constexpr diagnostic_note suggestion = [] {
    if constexpr (checkable && !(footprint <= Budget::bytes))
      return budget_suggestions<M, ShA, ShB, ShC, Budget, ScalarBytes>::find().note;
    else
      return diagnostic_note{};
  }();
  // Completing the report checks the budget (its notes are template arguments, which both
  // compilers print).
  static_assert(sizeof(budget_report<fits, exact_note_of<footprint_note.view().size() + 1>(footprint_note),
                                     exact_note_of<budget_note.view().size() + 1>(budget_note),
                                     exact_note_of<suggestion.view().size() + 1>(suggestion)>) > 0);
};

}  // namespace detail
}  // namespace shardwise
