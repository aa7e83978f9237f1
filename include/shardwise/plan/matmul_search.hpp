// shardwise/plan/matmul_search.hpp: plan_matmul, the search for the cheapest matmul plan on a
// mesh (what it searches: sharding_planner.hpp).
//
// The search is a branch and bound, cheap enough for a constant evaluation within the
// compilers' default limits on meshes of up to three axes and 4096 ranks (planned_matmul):
//   - kernels (each axis's roles, the variant) are bounded from below in closed form by the
//     mean over ranks of what their steps send and hold (the busiest rank sends at least the
//     mean; exact where blocks divide evenly), and explored in order of their bounds, until
//     none could beat the best plan found;
//   - a kernel's plans (for each C, the schedule contraction.hpp's planner writes) are costed
//     without writing their schedules (output_rank_costs, checked against the model by the
//     tests), first on the last rank (that of the largest blocks) and on every rank only when
//     that could still beat the best; where blocks divide evenly, one rank is every rank;
//   - where blocks divide evenly, axes of equal extent are interchangeable: of the kernels
//     that differ by exchanging them, one is searched, and the order of C's axes within a
//     dimension changes no cost.
//   - axes of extent 1 change no cost: the search runs on the mesh without them, whose plan
//     leaves them unused (so a 2 x 1 x 2 x 1 mesh plans as fast as 2 x 2).
// Any number of mesh axes is searched (9^d kernels on d axes of extents above 1: a run-time
// call for more than three). Pure compile-time code, usable at run time too.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/evaluated_ranks.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/plan/matmul_evaluation.hpp"
#include "shardwise/plan/matmul_kernels.hpp"
#include "shardwise/plan/matmul_outputs.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

namespace detail {

/// A plan found by the search, its costs bounded by `bound` (those of the last rank: exact when
/// blocks divide evenly) but not yet known on every evaluated rank.
struct open_plan {
  plan_bound bound{};
  matmul_kernel kernel{};
  output_plan plan{};  ///< a standard or ring plan; of SUMMA's, only C
};

/// The search (plan_matmul): kernels in order of their bounds and the plans they open in order
/// of theirs, the least bound first, so that a plan is evaluated on every rank only when nothing
/// left could be cheaper than it may be; both stop where nothing can beat the best plan found.
struct matmul_search {
  const block_geometry& mesh;
  const MatmulProblem& problem;
  bool even = false;
  block_geometry last{};  ///< the rank of the largest blocks: the busiest, where they differ
  MatmulChoice best{};
  std::vector<open_plan> opened{};
  std::vector<std::size_t> open{};  ///< of `opened`, a heap, the least bound on top

  static constexpr bool after(const plan_bound& x, const plan_bound& y) { return bound_before(y, x); }
  [[nodiscard]] constexpr auto open_after() const {
    return [this](std::size_t x, std::size_t y) { return after(opened[x].bound, opened[y].bound); };
  }

  constexpr matmul_search(const block_geometry& g, const MatmulProblem& p)
      : mesh(g), problem(p), even(divides_evenly(g, p.shape)), last(g) {
    for (int axis = 0; axis < g.ndim; ++axis)
      last.coordinate[static_cast<std::size_t>(axis)] = g.extents[static_cast<std::size_t>(axis)] - 1;
  }

  [[nodiscard]] constexpr bool could_beat(const plan_bound& bound) const {
    return detail::could_beat(bound, best, problem.budget_bytes);
  }

  struct layouts {
    tensor_axes ka{}, kb{}, a{}, b{};
    axis_list layers{};
  };
  [[nodiscard]] constexpr layouts layouts_of(const matmul_kernel& kn) const {
    layouts l;
    l.ka = matrix_axes(list_of(kn.am), list_of(kn.ak)), l.kb = matrix_axes(list_of(kn.bk), list_of(kn.bn));
    l.a = stored_once(l.ka, mesh.ndim), l.b = stored_once(l.kb, mesh.ndim);
    l.layers = list_of(kn.layers);
    return l;
  }

  /// The model on every evaluated rank (evaluate_matmul): SUMMA's plans, and any plan whose
  /// schedule is not the one output_rank_costs assumed (none, the tests say).
  constexpr void evaluate(const matmul_kernel& kn, const tensor_axes& c) {
    const layouts l = layouts_of(kn);
    const evaluated_choice e = evaluate_matmul(mesh, problem, l.a, l.b, l.ka, l.kb, c, kn.variant, l.layers, &best);
    if (e.fits && (!best.found || cheaper(e.choice, best))) best = e.choice;
  }

  /// A standard or ring plan whose costs are known: the best, when contraction.hpp's planner
  /// writes the schedule assumed.
  constexpr void accept(const matmul_kernel& kn, const output_plan& p, const plan_bound& costs) {
    const layouts l = layouts_of(kn);
    MatmulChoice x;
    x.plan = plan_contraction_via(matmul_indices, l.a, l.b, l.ka, l.kb, p.c, false, kn.variant, l.layers);
    if (!x.plan.error.ok()) return;
    const contraction_plan_data assumed = build_schedule(p, l.a, l.b);
    if (!(x.plan.steps == assumed.steps) || !(x.plan.start[Operand::C] == assumed.start[Operand::C]))
      return evaluate(kn, p.c);
    x.found = true;
    x.a = l.a, x.b = l.b, x.c = p.c, x.kernel_a = l.ka, x.kernel_b = l.kb, x.variant = kn.variant;
    x.traffic = {costs.bytes, costs.messages};
    x.footprint_bytes = costs.footprint;
    best = x;
  }

  /// An open plan's costs on every evaluated rank, until it cannot beat the best.
  constexpr void settle(const open_plan& o) {
    if (o.kernel.variant == VariantKind::summa || o.kernel.variant == VariantKind::summa_25d)
      return evaluate(o.kernel, o.plan.c);
    plan_bound costs = o.bound;
    bool outdone = false;
    for_each_evaluated_rank(mesh, [&](const block_geometry& geo) {
      const plan_bound here = output_rank_costs(geo, problem, o.plan);
      if (here.traffic() > costs.traffic()) costs.bytes = here.bytes, costs.messages = here.messages;
      costs.footprint = std::max(costs.footprint, here.footprint);
      outdone = !could_beat(costs);
      return !outdone;
    });
    if (!outdone) accept(o.kernel, o.plan, costs);
  }

  /// A plan bounded by `at_last`: settled now when that is exact (blocks divide evenly), else opened.
  constexpr void found(const matmul_kernel& kn, const output_plan& p, const plan_bound& at_last) {
    if (!could_beat(at_last)) return;
    if (even && kn.variant != VariantKind::summa && kn.variant != VariantKind::summa_25d) return accept(kn, p, at_last);
    if (even) return evaluate(kn, p.c);
    opened.push_back({at_last, kn, p});
    open.push_back(opened.size() - 1);
    std::push_heap(open.begin(), open.end(), open_after());
  }

  /// Every plan on `kn` that could beat the best, each bounded by its costs on the last rank.
  constexpr void expand(const matmul_kernel& kn) {
    if (kn.variant != VariantKind::summa && kn.variant != VariantKind::summa_25d) {
      auto wanted = [&](const plan_bound& bound) { return could_beat(bound); };
      for_each_output(mesh, problem, kn, !even, wanted, [&](const output_plan& p) {
        found(kn, p, output_rank_costs(last, problem, p));
      });
      return;
    }
    // SUMMA gathers no input: C is [am, bn] with the free axes sliced in and the layers
    // scattered; on the last rank, its broadcasts by their bytes (summa_bytes_at) and the fewest
    // messages any rank sends in them.
    const layouts l = layouts_of(kn);
    const operand_extents extents = matmul_extents(problem.shape);
    const std::int64_t panel_messages =
        summa_fewest_messages(problem.shape.k, static_cast<int>(ranks_over(mesh, kn.ak)),
                              static_cast<int>(ranks_over(mesh, kn.bk)), static_cast<int>(ranks_over(mesh, kn.layers)));
    output_plan p;
    auto bound_at_last = [&](const tensor_axes& c) {
      const contraction_plan_data plan = plan_contraction_via(matmul_indices, l.a, l.b, l.ka, l.kb, c, false, kn.variant, l.layers);
      if (!plan.error.ok()) return;
      operand_axes state = plan.start;
      plan_bound at_last;
      for (const Step& step : plan.steps) {
        if (step.kind == StepKind::summa_gemm) {
          at_last.bytes += summa_bytes_at(step, state, extents, last, problem.scalar_bytes);
        } else {
          const Traffic t = step_traffic(step, state, extents, last, problem.scalar_bytes, planner_panel_width);
          at_last.bytes += t.bytes, at_last.messages += t.messages;
        }
        apply_step(step, state);
      }
      at_last.messages += panel_messages;
      at_last.footprint = problem.scalar_bytes * matmul_footprint(plan.steps, plan.start, c, extents, last, planner_panel_width);
      p.c = c;
      found(kn, p, at_last);
    };
    const axis_mask all = (axis_mask{1} << mesh.ndim) - 1, rest = all & ~(kn.am | kn.bn);
    for (axis_mask to_m = rest;; to_m = (to_m - 1) & rest) {
      axis_list ms = list_of(to_m & ~kn.layers), mr = list_of(to_m & kn.layers);
      axis_list ns = list_of(rest & ~to_m & ~kn.layers), nr = list_of(rest & ~to_m & kn.layers);
      const std::int64_t messages = kn.messages_before_c + panel_messages +
                                    (mr.empty() ? 0 : scatter_messages(ranks_over(mesh, to_m & kn.layers))) +
                                    (nr.empty() ? 0 : scatter_messages(ranks_over(mesh, rest & ~to_m & kn.layers)));
      do {
        do {
          do {
            do {
              if (could_beat({kn.base.bytes, messages, kn.base.footprint}))
                bound_at_last(matrix_axes(concat(concat(l.ka.dim(0), ms), mr), concat(concat(l.kb.dim(1), ns), nr)));
            } while (!even && std::next_permutation(nr.begin(), nr.end()));
          } while (!even && std::next_permutation(ns.begin(), ns.end()));
        } while (!even && std::next_permutation(mr.begin(), mr.end()));
      } while (!even && std::next_permutation(ms.begin(), ms.end()));
      if (to_m == 0) break;
    }
  }
};

/// `choice`, planned on the mesh of the axes `original[0]`, `original[1]`, ... of another mesh
/// (in their order), written with that mesh's axis indices.
constexpr void rename_axes(MatmulChoice& choice, const std::array<int, max_mesh_axes>& original) {
  auto list = [&](axis_list& axes) {
    for (int& a : axes) a = original[static_cast<std::size_t>(a)];
  };
  auto tensor = [&](tensor_axes& t) {
    for (axis_list& axes : t.dims) list(axes);
    list(t.partial);
  };
  for (tensor_axes* t : {&choice.a, &choice.b, &choice.c, &choice.kernel_a, &choice.kernel_b}) tensor(*t);
  for (tensor_axes& t : choice.plan.start.of) tensor(t);
  list(choice.layers);
  for (Step& step : choice.plan.steps) {
    list(step.axes);
    list(step.b_axes);
    list(step.layers);
  }
  if (choice.plan.error.axis >= 0) choice.plan.error.axis = original[static_cast<std::size_t>(choice.plan.error.axis)];
}

/// plan_matmul's search, over the kernels of one variant only when `only` is 0 (standard) to 3
/// (summa_25d; VariantKind's order), over all of them when it is -1; its caller has checked the
/// arguments.
constexpr MatmulChoice search_matmul(const block_geometry& mesh, const MatmulProblem& problem, int only) {
  // An axis of extent 1 changes no block, no group and no cost, but would multiply the search
  // by up to 9 (its roles in the kernels) and the outputs by the places it could take in C: the
  // plan is that of the mesh without such axes, which leaves them unused (every operand is
  // "replicated" over one rank, i.e. stored once).
  if (std::any_of(mesh.extents.begin(), mesh.extents.begin() + mesh.ndim, [](int e) { return e == 1; })) {
    block_geometry kept;
    std::array<int, max_mesh_axes> original{};
    for (int a = 0; a < mesh.ndim; ++a)
      if (mesh.extents[static_cast<std::size_t>(a)] != 1) {
        original[static_cast<std::size_t>(kept.ndim)] = a;
        kept.extents[static_cast<std::size_t>(kept.ndim)] = mesh.extents[static_cast<std::size_t>(a)];
        kept.coordinate[static_cast<std::size_t>(kept.ndim++)] = mesh.coordinate[static_cast<std::size_t>(a)];
      }
    MatmulChoice choice = search_matmul(kept, problem, only);
    rename_axes(choice, original);
    return choice;
  }
  matmul_search search(mesh, problem);
  std::vector<matmul_kernel> kernels;
  {
    std::size_t most = 1, grids = 1;
    for (int a = 0; a < mesh.ndim; ++a) most *= 9, grids *= 4;
    kernels.reserve(2 * most + grids);
  }
  const kernel_context sizes(mesh, problem);
  for_each_kernel(mesh, search.even, [&](matmul_kernel kn) {
    if (only >= 0 && static_cast<int>(kn.variant) != only) return;
    if (bound_kernel(sizes, problem, kn) && kn.bound.footprint <= problem.budget_bytes) kernels.push_back(kn);
  });
  // Kernels and open plans, the least bound first: until a plan fits, the kernel of the least
  // bound and then the open plan of the least (a first plan prunes most of the others); then of
  // the kernels that could still beat it, sorted.
  auto next_open_first = [&](const plan_bound& kernel) {
    return !search.open.empty() && !bound_before(kernel, search.opened[search.open.front()].bound);
  };
  auto settle_next = [&] {
    std::pop_heap(search.open.begin(), search.open.end(), search.open_after());
    const std::size_t next = search.open.back();
    search.open.pop_back();
    if (search.could_beat(search.opened[next].bound)) search.settle(search.opened[next]);
  };
  std::size_t expanded = 0;
  while (!search.best.found) {
    if (expanded == kernels.size()) {
      if (search.open.empty()) return search.best;
      settle_next();
      continue;
    }
    std::size_t least = expanded;
    for (std::size_t i = expanded + 1; i < kernels.size(); ++i)
      if (bound_before(kernels[i].bound, kernels[least].bound)) least = i;
    std::swap(kernels[expanded], kernels[least]);
    search.expand(kernels[expanded++]);
    while (!search.best.found && !search.open.empty()) settle_next();
  }
  std::vector<matmul_kernel> left;
  for (std::size_t i = expanded; i < kernels.size(); ++i)
    if (search.could_beat(kernels[i].bound)) left.push_back(kernels[i]);
  std::sort(left.begin(), left.end(),
            [](const matmul_kernel& x, const matmul_kernel& y) { return bound_before(x.bound, y.bound); });
  for (std::size_t i = 0;;) {
    const bool kernel = i < left.size() && search.could_beat(left[i].bound);
    if (kernel && !next_open_first(left[i].bound)) {
      search.expand(left[i++]);
    } else if (!search.open.empty()) {
      settle_next();
    } else {
      break;
    }
  }
  return search.best;
}

}  // namespace detail

/// The cheapest plan for `problem` on a mesh given by its extents (see sharding_planner.hpp).
/// Throws std::invalid_argument (in a constant evaluation: a compile error) for an extent m, k or
/// n below 0, scalar_bytes below 1, a negative budget, or a mesh extent below 1.
constexpr MatmulChoice plan_matmul(const detail::block_geometry& mesh, const MatmulProblem& problem) {
  detail::check_planner_mesh("shardwise::plan_matmul", mesh);
  detail::check_matmul_problem("shardwise::plan_matmul", problem);
  return detail::search_matmul(mesh, problem, -1);
}

/// The same for a mesh type (its extents as the object gives them).
template <MeshType M>
constexpr MatmulChoice plan_matmul(const M& mesh, const MatmulProblem& problem) {
  return plan_matmul(detail::block_geometry(mesh, typename M::coordinate_type{}), problem);
}

}  // namespace shardwise
