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
// small meshes). Pure compile-time code, usable at run time too: a large mesh takes more
// constant-evaluation steps than compilers allow by default.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/policy.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/plan/step.hpp"
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

/// The planner's answer (see the top of this file); `found` is false when no plan fits.
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

/// f(geometry), or f's verdict when it returns whether to go on (false: stop).
template <typename F>
constexpr bool visit_evaluated_rank(F& f, const block_geometry& geo) {
  if constexpr (std::is_same_v<decltype(f(geo)), bool>) return f(geo);
  else {
    f(geo);
    return true;
  }
}

/// Calls f(geometry) for the ranks the planner evaluates (see the top of this file); an f that
/// returns bool stops the walk by returning false.
template <typename F>
constexpr void for_each_evaluated_rank(const block_geometry& mesh, F&& f) {
  int size = 1;
  for (int a = 0; a < mesh.ndim; ++a) size *= mesh.extents[static_cast<std::size_t>(a)];
  std::array<static_vector<int, 5>, max_mesh_axes> picks{};
  if (size > 64)
    for (int a = 0; a < mesh.ndim; ++a) {
      const int e = mesh.extents[static_cast<std::size_t>(a)];
      auto& p = picks[static_cast<std::size_t>(a)];
      for (int i : {0, 1, e / 2, e - 2, e - 1})  // increasing for e >= 4; repeats skipped
        if (i >= 0 && i < e && !(p.size() > 0 && p.back() >= i)) p.push_back(i);
    }
  block_geometry geo = mesh;
  if (size <= 64) {
    for (int r = 0; r < size; ++r) {
      int rest = r;
      for (int a = mesh.ndim; a-- > 0;) {
        geo.coordinate[static_cast<std::size_t>(a)] = rest % mesh.extents[static_cast<std::size_t>(a)];
        rest /= mesh.extents[static_cast<std::size_t>(a)];
      }
      if (!visit_evaluated_rank(f, geo)) return;
    }
    return;
  }
  std::array<std::size_t, max_mesh_axes> index{};
  for (;;) {
    for (int a = 0; a < mesh.ndim; ++a)
      geo.coordinate[static_cast<std::size_t>(a)] = picks[static_cast<std::size_t>(a)][index[static_cast<std::size_t>(a)]];
    if (!visit_evaluated_rank(f, geo)) return;
    int a = mesh.ndim - 1;
    for (; a >= 0; --a) {
      if (++index[static_cast<std::size_t>(a)] < picks[static_cast<std::size_t>(a)].size()) break;
      index[static_cast<std::size_t>(a)] = 0;
    }
    if (a < 0) return;
  }
}

/// The choice for stored layouts a, b, c, kernel layouts ka, kb and a variant, with its costs;
/// `found` false when it does not plan, and `fits` false when it exceeds the budget. Given a
/// found `rival`, the walk over ranks stops as soon as some rank sends more bytes than the
/// rival's busiest one (the choice could not be cheaper; it is then not `fits`, and its costs
/// are partial): the search skips most of its candidates this way.
struct evaluated_choice {
  MatmulChoice choice{};
  bool plans = false, fits = false;
};
constexpr evaluated_choice evaluate_matmul(const block_geometry& mesh, const MatmulProblem& problem,
                                           const tensor_axes& a, const tensor_axes& b, const tensor_axes& ka,
                                           const tensor_axes& kb, const tensor_axes& c, VariantKind variant,
                                           const axis_list& layers, const MatmulChoice* rival = nullptr) {
  evaluated_choice e;
  MatmulChoice& m = e.choice;
  m.plan = plan_contraction_via(matmul_indices, a, b, ka, kb, c, false, variant, layers);
  if (!m.plan.error.ok()) return e;
  e.plans = true;
  m.a = a, m.b = b, m.c = c, m.kernel_a = ka, m.kernel_b = kb, m.variant = variant, m.layers = layers;
  m.panel_width = variant == VariantKind::summa || variant == VariantKind::summa_25d ? planner_panel_width : 0;
  const operand_extents extents = matmul_extents(problem.shape);
  const bool against_rival = rival != nullptr && rival->found;
  bool outdone = false;
  for_each_evaluated_rank(mesh, [&](const block_geometry& geo) {
    const Traffic t = schedule_traffic(m.plan.steps, m.plan.start, extents, geo, problem.scalar_bytes, m.panel_width);
    if (t.bytes > m.traffic.bytes || (t.bytes == m.traffic.bytes && t.messages > m.traffic.messages)) m.traffic = t;
    if (against_rival && m.traffic.bytes > rival->traffic.bytes) {
      outdone = true;
      return false;
    }
    const std::int64_t held = problem.scalar_bytes * schedule_footprint(m.plan.steps, m.plan.start, c, extents, geo,
                                                                        m.panel_width);
    if (held > m.footprint_bytes) m.footprint_bytes = held;
    return true;
  });
  e.fits = !outdone && m.footprint_bytes <= problem.budget_bytes;
  m.found = e.fits;
  return e;
}

/// Whether x is cheaper than y: fewer bytes from the busiest rank, then fewer messages, then a
/// smaller footprint.
constexpr bool cheaper(const MatmulChoice& x, const MatmulChoice& y) {
  if (x.traffic.bytes != y.traffic.bytes) return x.traffic.bytes < y.traffic.bytes;
  if (x.traffic.messages != y.traffic.messages) return x.traffic.messages < y.traffic.messages;
  return x.footprint_bytes < y.footprint_bytes;
}

/// A kernel layout stored once: the axes it does not use appended, in mesh order, to its last
/// dimension (their AllGather is the kernel's replication).
constexpr tensor_axes stored_once(const tensor_axes& kernel, int mesh_axes) {
  tensor_axes stored = kernel;
  const axis_list used = kernel.used();
  for (int axis = 0; axis < mesh_axes; ++axis)
    if (!contains(used, axis)) stored.dim(kernel.rank - 1).push_back(axis);
  return stored;
}

/// Every matrix sharding that stores a matrix once on `mesh_axes` axes: each axis splits the
/// rows or the columns, in every order within a dimension.
constexpr static_vector<tensor_axes, 64> stored_once_layouts(int mesh_axes) {
  static_vector<tensor_axes, 64> result;
  std::array<int, max_mesh_axes> order{};
  for (int i = 0; i < mesh_axes; ++i) order[static_cast<std::size_t>(i)] = i;
  // Every order of the axes, and for each the number of them (from the front) in the rows.
  for (;;) {
    for (int rows = 0; rows <= mesh_axes; ++rows) {
      tensor_axes t;
      t.rank = 2;
      for (int i = 0; i < mesh_axes; ++i) t.dim(i < rows ? 0 : 1).push_back(order[static_cast<std::size_t>(i)]);
      bool seen = false;
      for (const tensor_axes& known : result) seen = seen || known == t;
      if (!seen) result.push_back(t);
    }
    // next permutation of order[0, mesh_axes)
    int i = mesh_axes - 2;
    while (i >= 0 && order[static_cast<std::size_t>(i)] > order[static_cast<std::size_t>(i + 1)]) --i;
    if (i < 0) break;
    int j = mesh_axes - 1;
    while (order[static_cast<std::size_t>(j)] < order[static_cast<std::size_t>(i)]) --j;
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
    for (int l = i + 1, r = mesh_axes - 1; l < r; ++l, --r) std::swap(order[static_cast<std::size_t>(l)], order[static_cast<std::size_t>(r)]);
  }
  return result;
}

}  // namespace detail

/// The cheapest plan for `problem` on a mesh given by its extents (see the top of this file).
constexpr MatmulChoice plan_matmul(const detail::block_geometry& mesh, const MatmulProblem& problem) {
  using namespace detail;
  const int d = mesh.ndim;
  MatmulChoice best;
  const auto outputs = stored_once_layouts(d);
  auto consider = [&](const tensor_axes& ka, const tensor_axes& kb, VariantKind variant, const axis_list& layers) {
    const tensor_axes a = stored_once(ka, d), b = stored_once(kb, d);
    for (const tensor_axes& c : outputs)
      for (VariantKind v : {variant, VariantKind::ring}) {
        if (v == VariantKind::ring && variant != VariantKind::standard) continue;
        const evaluated_choice e = evaluate_matmul(mesh, problem, a, b, ka, kb, c, v, layers, &best);
        if (e.fits && (!best.found || cheaper(e.choice, best))) best = e.choice;
      }
  };
  // Each axis: its role in A's kernel (0: m, 1: k, 2: none) and in B's (0: k, 1: n, 2: none).
  int assignments = 1;
  for (int a = 0; a < d; ++a) assignments *= 9;
  for (int code = 0; code < assignments; ++code) {
    tensor_axes ka, kb;
    ka.rank = kb.rank = 2;
    axis_list free_axes;  // in neither kernel: a 2.5D layer candidate
    int rest = code;
    for (int axis = 0; axis < d; ++axis) {
      const int role = rest % 9;
      rest /= 9;
      if (role / 3 < 2) ka.dim(role / 3).push_back(axis);
      if (role % 3 < 2) kb.dim(role % 3).push_back(axis);
      if (role == 8) free_axes.push_back(axis);
    }
    consider(ka, kb, VariantKind::standard, {});
    consider(ka, kb, VariantKind::summa, {});
    for (unsigned subset = 1; subset < (1u << free_axes.size()); ++subset) {
      axis_list layers;
      for (std::size_t i = 0; i < free_axes.size(); ++i)
        if ((subset >> i) & 1u) layers.push_back(free_axes[i]);
      consider(ka, kb, VariantKind::summa_25d, layers);
    }
  }
  return best;
}

/// The same for a mesh type (its extents as the object gives them).
template <MeshType M>
constexpr MatmulChoice plan_matmul(const M& mesh, const MatmulProblem& problem) {
  return plan_matmul(detail::block_geometry(mesh, typename M::coordinate_type{}), problem);
}

/// A plan and the mesh it runs on.
struct MeshedMatmulChoice {
  MatmulChoice choice{};            ///< The plan; `found` false when none fits on any mesh.
  detail::block_geometry mesh{};    ///< Its mesh (extents; coordinates zero).
};

/// Every mesh of `ranks` ranks with one to three axes, the later ones of at least 2 and the
/// extents non-increasing: {P}, {P/a, a}, {P/a/b, b, a}.
inline std::vector<detail::block_geometry> meshes_of(int ranks) {
  auto mesh = [](std::initializer_list<int> extents) {
    detail::block_geometry g;
    for (int e : extents) g.extents[static_cast<std::size_t>(g.ndim++)] = e;
    return g;
  };
  std::vector<detail::block_geometry> result{mesh({ranks})};
  for (int a = 2; a * a <= ranks; ++a)
    if (ranks % a == 0) result.push_back(mesh({ranks / a, a}));
  for (int a = 2; a * a * a <= ranks; ++a)
    if (ranks % a == 0)
      for (int b = a; a * b * b <= ranks; ++b)
        if ((ranks / a) % b == 0) result.push_back(mesh({ranks / a / b, b, a}));
  return result;
}

/// The cheapest plan over every mesh of `ranks` ranks (meshes_of): when the data is
/// redistributed anyway, as the ScaLAPACK drop-in does, the mesh is a choice too.
inline MeshedMatmulChoice plan_matmul_any_mesh(int ranks, const MatmulProblem& problem) {
  MeshedMatmulChoice best;
  for (const detail::block_geometry& g : meshes_of(ranks)) {
    const MatmulChoice c = plan_matmul(g, problem);
    if (c.found && (!best.choice.found || detail::cheaper(c, best.choice))) best = {c, g};
  }
  return best;
}

/// The variant type of a choice, for planned_matmul.
namespace detail {
template <MeshType M, const MatmulChoice& C, VariantKind K = C.variant>
struct planned_inner_variant {
  using type = variant::Standard;
};
template <MeshType M, const MatmulChoice& C>
struct planned_inner_variant<M, C, VariantKind::ring> {
  using type = variant::Ring;
};
template <MeshType M, const MatmulChoice& C>
struct planned_inner_variant<M, C, VariantKind::summa> {
  using type = variant::Summa<planner_panel_width>;
};
template <MeshType M, const axis_list& Layers, typename Positions>
struct layer_variant;
template <MeshType M, const axis_list& Layers, std::size_t... I>
struct layer_variant<M, Layers, std::index_sequence<I...>> {
  using type = variant::Summa25DPanels<planner_panel_width,
                                       M::template axis_type<static_cast<std::size_t>(Layers[I])>::fixed_name...>;
};
template <MeshType M, const MatmulChoice& C>
struct planned_inner_variant<M, C, VariantKind::summa_25d> {
  static constexpr axis_list layers = C.layers;
  using type = typename layer_variant<M, layers, std::make_index_sequence<layers.size()>>::type;
};
}  // namespace detail

/// A planner's choice (a constexpr MatmulChoice with static storage) as types: the shardings to
/// store A, B and C in, and the variant to pass to matmul:
///   auto c = sw::matmul<P::c_sharding>(a, b, P::variant{});   // a, b sharded as P::a_sharding, P::b_sharding
template <MeshType M, const MatmulChoice& Choice>
struct planned_matmul {
  static_assert(Choice.found, "shardwise::planned_matmul: the planner found no plan that fits the budget");
  /// The choice's shardings as values: A, B and C as stored, A and B as the product runs on them.
  ///@{
  static constexpr detail::tensor_axes a_axes = Choice.a, b_axes = Choice.b, c_axes = Choice.c;
  static constexpr detail::tensor_axes kernel_a_axes = Choice.kernel_a, kernel_b_axes = Choice.kernel_b;
  ///@}
  /// The TensorShardings to store A, B and C in.
  ///@{
  using a_sharding = sharding_of_t<M, a_axes>;
  using b_sharding = sharding_of_t<M, b_axes>;
  using c_sharding = sharding_of_t<M, c_axes>;
  ///@}
  /// The variant to pass to matmul: variant::Via the kernel layouts, with the chosen inner variant.
  using variant = variant::Via<sharding_of_t<M, kernel_a_axes>, sharding_of_t<M, kernel_b_axes>,
                               typename detail::planned_inner_variant<M, Choice>::type>;
  /// The matmul_plan of that call.
  using plan = matmul_plan<M, a_sharding, b_sharding, c_sharding, variant>;
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
    if (t.bytes > worst.bytes || (t.bytes == worst.bytes && t.messages > worst.messages)) worst = t;
  });
  return worst;
}

constexpr bool less_traffic(const Traffic& x, const Traffic& y) {
  return x.bytes != y.bytes ? x.bytes < y.bytes : x.messages < y.messages;
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
      if (!nodes[i].done && (current < 0 || less_traffic(nodes[i].distance, nodes[static_cast<std::size_t>(current)].distance)))
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
      } else if (!nodes[static_cast<std::size_t>(i)].done && less_traffic(total, nodes[static_cast<std::size_t>(i)].distance)) {
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
