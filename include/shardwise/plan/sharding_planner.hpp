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
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/describe.hpp"
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

/// f(geometry), or f's verdict when it returns whether to go on (false: stop).
template <typename F>
constexpr bool visit_evaluated_rank(F& f, const block_geometry& geo) {
  if constexpr (std::is_same_v<decltype(f(geo)), bool>) return f(geo);
  else {
    f(geo);
    return true;
  }
}

/// Calls f(geometry) for the ranks the planner evaluates (see the top of this file), from the
/// last: where blocks differ, the last ones are the largest (partition.hpp), so a walk that
/// looks for the busiest rank meets it early. An f that returns bool stops the walk by
/// returning false.
template <typename F>
constexpr void for_each_evaluated_rank(const block_geometry& mesh, F&& f) {
  int size = 1;
  for (int a = 0; a < mesh.ndim; ++a) size *= mesh.extents[static_cast<std::size_t>(a)];
  std::array<static_vector<int, 5>, max_mesh_axes> picks{};
  if (size > 64)
    for (int a = 0; a < mesh.ndim; ++a) {
      const int e = mesh.extents[static_cast<std::size_t>(a)];
      auto& p = picks[static_cast<std::size_t>(a)];
      for (int i : {e - 1, e - 2, e / 2, 1, 0})  // decreasing for e >= 4; repeats skipped
        if (i >= 0 && i < e && !(p.size() > 0 && p.back() <= i)) p.push_back(i);
    }
  block_geometry geo = mesh;
  if (size <= 64) {
    for (int r = size; r-- > 0;) {
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

/// The larger of two traffics as the planner ranks ranks: more bytes, then more messages.
constexpr bool busier(const Traffic& x, const Traffic& y) {
  return x.bytes != y.bytes ? x.bytes > y.bytes : x.messages > y.messages;
}

/// What the busiest rank sends in a SUMMA step when blocks divide evenly: a rank's share of the
/// step is A's panels (by its group rank along A's panel axes and its layer) plus B's (by its
/// group rank along B's and its layer), three disjoint sets of axes, so the busiest rank is the
/// busiest A rank plus the busiest B rank of the busiest layer. A rank in a chain broadcast
/// sends every panel of its layer but those of the root after it (it is their last link).
constexpr Traffic summa_busiest(const Step& step, const operand_axes& state, const operand_extents& global,
                                const block_geometry& mesh, std::int64_t scalar_bytes, int panel_width) {
  const block_geometry& geo = mesh;  // coordinates 0: every block has the same extents
  const std::int64_t k = global[0][1];
  const std::int64_t m_local = geo.extent(global[0][0], state[Operand::A].dim(0));
  const std::int64_t n_local = geo.extent(global[1][1], state[Operand::B].dim(1));
  const int a_group = geo.group_size(step.axes), b_group = geo.group_size(step.b_axes);
  const int layers = step.layers.empty() ? 1 : geo.group_size(step.layers);
  // Per layer: for each side, the root whose panels weigh least (bytes, then count) is the one
  // whose predecessor sends most; a root with no panel in the layer weighs nothing.
  struct side {
    int group = 1, roots_seen = 0, current = -1;
    std::int64_t local = 0, width = 0, count = 0, least_width = 0, least_count = 0;
    constexpr void close() {
      if (current < 0) return;
      ++roots_seen;
      if (roots_seen == 1 || local * width < local * least_width ||
          (local * width == local * least_width && count < least_count)) {
        least_width = width;
        least_count = count;
      }
    }
    constexpr void add(int root, std::int64_t w) {
      if (root != current) {
        close();
        current = root;
        width = count = 0;
      }
      width += w;
      ++count;
    }
    constexpr Traffic busiest(std::int64_t range, std::int64_t panels, std::int64_t bytes) {
      if (group <= 1) return {};
      close();
      current = -1;
      if (roots_seen < group) least_width = least_count = 0;
      return {local * (range - least_width) * bytes, panels - least_count};
    }
  };
  Traffic worst;
  for (int layer = 0; layer < layers; ++layer) {
    const std::int64_t first = block_begin(k, layers, layer), last = block_begin(k, layers, layer + 1);
    side a{a_group, 0, -1, m_local}, b{b_group, 0, -1, n_local};
    std::int64_t panels = 0;
    for_each_summa_panel(
        k, a_group, b_group, panel_width,
        [&](const summa_panel& p) {
          a.add(p.a_root, p.width);
          b.add(p.b_root, p.width);
          ++panels;
        },
        first, last);
    const Traffic t = a.busiest(last - first, panels, scalar_bytes) + b.busiest(last - first, panels, scalar_bytes);
    if (layer == 0 || busier(t, worst)) worst = t;
  }
  return worst;
}

/// The bytes the rank at `geo` sends in a SUMMA step (what step_traffic counts, without its
/// loop over panels): in its layer's range of k, the rank sends its rows of A's panels but
/// those of the root after it in A's group, and its columns of B's but those of the root after
/// it in B's group (it is the last link of their chains).
constexpr std::int64_t summa_bytes_at(const Step& step, const operand_axes& state, const operand_extents& global,
                                      const block_geometry& geo, std::int64_t scalar_bytes) {
  const std::int64_t k = global[0][1];
  const k_range range = layer_k_range(step, k, geo);
  auto side = [&](const axis_list& axes, std::int64_t local) -> std::int64_t {
    const int g = geo.group_size(axes);
    if (g <= 1) return 0;
    const int skipped = (geo.group_rank(axes) + 1) % g;  // the root this rank is the last link of
    const std::int64_t first = std::max(range.first, block_begin(k, g, skipped));
    const std::int64_t last = std::min(range.last, block_begin(k, g, skipped + 1));
    return local * (range.last - range.first - std::max<std::int64_t>(0, last - first));
  };
  return scalar_bytes * (side(step.axes, geo.extent(global[0][0], state[Operand::A].dim(0))) +
                         side(step.b_axes, geo.extent(global[1][1], state[Operand::B].dim(1))));
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
    if (busier(t, m.traffic)) m.traffic = t;
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
  if (x.traffic.bytes != y.traffic.bytes) return x.traffic.bytes < y.traffic.bytes;
  if (x.traffic.messages != y.traffic.messages) return x.traffic.messages < y.traffic.messages;
  return x.footprint_bytes < y.footprint_bytes;
}

/// A matrix layout of two axis lists.
constexpr tensor_axes matrix_axes(const axis_list& rows, const axis_list& cols) {
  tensor_axes t;
  t.rank = 2;
  t.dim(0) = rows;
  t.dim(1) = cols;
  return t;
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

/// A set of mesh axes, axis a as bit a; the list made of it is in mesh order.
using axis_mask = std::uint32_t;
static_assert(max_mesh_axes <= 32, "shardwise: the planner keeps a set of mesh axes in 32 bits");

constexpr axis_list list_of(axis_mask set) {
  axis_list list;
  for (int a = 0; set != 0; ++a, set >>= 1)
    if ((set & 1u) != 0) list.push_back(a);
  return list;
}

/// Ranks along the axes of `set` (the product of their extents).
constexpr std::int64_t ranks_over(const block_geometry& mesh, axis_mask set) {
  std::int64_t ranks = 1;
  for (int a = 0; set != 0; ++a, set >>= 1)
    if ((set & 1u) != 0) ranks *= mesh.extents[static_cast<std::size_t>(a)];
  return ranks;
}

/// What bound_kernel needs of a mesh and a problem, computed once: ranks_over for every set of
/// axes (from a table, for meshes of at most six axes) and the operands' sizes.
struct kernel_context {
  const block_geometry* mesh = nullptr;
  std::array<std::int64_t, 64> table{};
  axis_mask all = 0;
  std::int64_t ranks = 1, mk = 0, kn = 0, mn = 0, stored = 0, scalar_bytes = 8;
  constexpr kernel_context(const block_geometry& g, const MatmulProblem& problem) : mesh(&g) {
    all = (axis_mask{1} << g.ndim) - 1;
    ranks = ranks_over(g, all);
    mk = problem.shape.m * problem.shape.k, kn = problem.shape.k * problem.shape.n;
    mn = problem.shape.m * problem.shape.n;
    stored = mk / ranks + kn / ranks + mn / ranks;
    scalar_bytes = problem.scalar_bytes;
    if (g.ndim > 6) return;
    table[0] = 1;
    for (axis_mask set = 1; set <= all; ++set) {
      int lowest = 0;
      while (((set >> lowest) & 1u) == 0) ++lowest;
      table[set] = table[set & (set - 1)] * g.extents[static_cast<std::size_t>(lowest)];
    }
  }
  constexpr std::int64_t operator()(axis_mask set) const { return mesh->ndim <= 6 ? table[set] : ranks_over(*mesh, set); }
};

/// The highest axis of a non-empty set, as its bit.
constexpr axis_mask last_axis(axis_mask set) {
  while ((set & (set - 1)) != 0) set &= set - 1;
  return set;
}

/// Whether the list of `prefix` starts the list of `list` (both in mesh order).
constexpr bool starts(axis_mask prefix, axis_mask list) {
  if ((prefix & ~list) != 0) return false;
  const axis_mask rest = list & ~prefix;
  return prefix == 0 || rest == 0 || (rest & ((last_axis(prefix) << 1) - 1)) == 0;
}

/// floor((g - 1) * elements / (split * g)): the mean over all ranks of the elements each sends in
/// a ring collective over groups of g (or a chain broadcast of panels over them), of a tensor of
/// `elements` split `split` ways by the axes outside the group (after a gather, before a
/// scatter). A group's members send (g - 1) times what the group holds together, and the
/// groups' blocks tile the tensor `ranks / (split * g)` times, whatever the extents. The busiest
/// rank sends at least the mean.
constexpr std::int64_t mean_sent(std::int64_t g, std::int64_t elements, std::int64_t split) {
  if (g <= 1) return 0;
  const std::int64_t parts = split * g, whole = elements / parts, rest = elements % parts;
  return (g - 1) * whole + (g - 1) * rest / parts;
}

/// Messages of a ring collective (AllGather or ReduceScatter) over `group` ranks.
constexpr std::int64_t scatter_messages(std::int64_t group) { return group > 1 ? group - 1 : 0; }

/// Lower bounds of the costs of some plans: the bytes and messages of the busiest rank, and
/// the bytes held by the rank that holds the most (each at most the model's value for any of
/// them, so a plan bounded by one that cannot beat a choice cannot beat it either).
struct plan_bound {
  std::int64_t bytes = 0, messages = 0, footprint = 0;
};

/// Whether a plan bounded by `bound` could fit `budget` and be cheaper than `best`.
constexpr bool could_beat(const plan_bound& bound, const MatmulChoice& best, std::int64_t budget) {
  if (bound.footprint > budget) return false;
  if (!best.found) return true;
  if (bound.bytes != best.traffic.bytes) return bound.bytes < best.traffic.bytes;
  if (bound.messages != best.traffic.messages) return bound.messages < best.traffic.messages;
  return bound.footprint < best.footprint_bytes;
}

/// The order of the search: the smaller bound first (bytes, then messages, then footprint).
constexpr bool bound_before(const plan_bound& x, const plan_bound& y) {
  if (x.bytes != y.bytes) return x.bytes < y.bytes;
  if (x.messages != y.messages) return x.messages < y.messages;
  return x.footprint < y.footprint;
}

/// One kernel of the search: the axes of A's kernel layout [am, ak] and B's [bk, bn] (each list
/// in mesh order), the variant and 2.5D's layer axes; then what bound_kernel derives: the axes
/// the product leaves C pending over, how it matches the splits of k, and bounds of every plan
/// on the kernel (`base`: of those that gather no input along m or n; `bound`: of all, with the
/// gathers an axis on both m and n needs), their messages with the fewest C's ReduceScatters
/// can take.
struct matmul_kernel {
  axis_mask am = 0, ak = 0, bk = 0, bn = 0, layers = 0;
  VariantKind variant = VariantKind::standard;
  axis_mask pending = 0;
  plan_bound bound{};
  plan_bound base{};                   ///< `bound` but for the gathers an axis on both m and n needs
  /// How the product matches A's and B's splits of k (standard and ring).
  enum class k_match : unsigned char { same, slice_a, slice_b, gather } match = k_match::same;
  std::int64_t messages_before_c = 0;  ///< of the steps up to the product (SUMMA's broadcasts aside)
};

/// Fills in `kn`'s pending axes and bounds from the steps its schedule must take (contraction.hpp's
/// rules on the kernel layouts: A and B gathered from their stored-once layouts, k matched by a
/// slice or gathered, SUMMA's panels, the pending sum scattered, at the mean over ranks); false
/// when the kernel cannot plan (SUMMA off a grid, a ring with nothing to overlap).
constexpr bool bound_kernel(const kernel_context& size, const MatmulProblem& problem, matmul_kernel& kn) {
  const std::int64_t m = problem.shape.m, n = problem.shape.n;
  const bool ring = kn.variant == VariantKind::ring;
  const bool grid = kn.variant == VariantKind::summa || kn.variant == VariantKind::summa_25d;
  const std::int64_t am = size(kn.am), ak = size(kn.ak), bk = size(kn.bk), bn = size(kn.bn);
  std::int64_t words = 0, messages = 0, held = size.stored;
  // A gathered along k over the axes its kernel does not use, B along n (each then held).
  if (const axis_mask ua = size.all & ~(kn.am | kn.ak); ua != 0) {
    const std::int64_t g = size(ua);
    words += mean_sent(g, size.mk, am * ak), messages += scatter_messages(g), held += size.mk / (am * ak);
  }
  if (const axis_mask ub = size.all & ~(kn.bk | kn.bn); ub != 0) {
    const std::int64_t g = size(ub);
    words += mean_sent(g, size.kn, bk * bn), messages += scatter_messages(g), held += size.kn / (bk * bn);
  }
  int gathers = 0;  // the product's own (a ring overlaps exactly one along k, or the ReduceScatter after it)
  std::int64_t panels = 0;  // SUMMA's broadcasts, at least
  using match = matmul_kernel::k_match;
  if (grid) {
    if (kn.am == 0 || kn.ak == 0 || kn.am != kn.bk || kn.ak != kn.bn) return false;
    if (kn.variant == VariantKind::summa_25d && (kn.layers == 0 || (kn.layers & (kn.am | kn.ak)) != 0)) return false;
    const std::int64_t layers = size(kn.layers);
    words += mean_sent(ak, size.mk, am * layers) + mean_sent(bk, size.kn, bn * layers);
    // Without layers, a rank sends a panel of every root with a block but the one after it
    // (search_kernel counts the panels themselves: summa_fewest_messages).
    if (layers == 1) {
      const std::int64_t k = problem.shape.k;
      panels = (ak > 1 ? std::min(ak, k) - 1 : 0) + (bk > 1 ? std::min(bk, k) - 1 : 0);
    }
    held += planner_panel_width * (m / am + n / bn);
    kn.pending = kn.layers;
  } else if (kn.ak == kn.bk) {
    kn.pending = kn.ak;
  } else if (!ring && starts(kn.ak, kn.bk) && ((kn.bk & ~kn.ak) & kn.am) == 0) {
    kn.pending = kn.bk, kn.match = match::slice_a;  // A sliced along k to B's split
    held += size.mk / (am * bk);
  } else if (!ring && starts(kn.bk, kn.ak) && ((kn.ak & ~kn.bk) & kn.bn) == 0) {
    kn.pending = kn.ak, kn.match = match::slice_b;  // B sliced along k to A's split
    held += size.kn / (ak * bn);
  } else {
    kn.match = match::gather;
    if (kn.ak != 0) {
      ++gathers, words += mean_sent(ak, size.mk, am), messages += scatter_messages(ak);
      held += ring ? 2 * (size.mk / (am * ak)) : size.mk / am;  // a ring: two chunks in flight
    }
    if (kn.bk != 0) {
      ++gathers, words += mean_sent(bk, size.kn, bn), messages += scatter_messages(bk);
      held += ring ? 2 * (size.kn / (bk * bn)) : size.kn / bn;
    }
  }
  if (ring && !(gathers == 1 || (gathers == 0 && kn.pending != 0))) return false;
  // C between the product and the steps after it (some: C stored once uses every axis), at
  // least as large as the natural block; a ring that fuses its ReduceScatter holds chunks.
  if ((kn.am | kn.bn) != size.all) held += ring && gathers == 0 ? 3 * (m + n) : size.mn / (am * bn);
  // Stored once, C scatters every pending axis: over all of them, a block at most as split as
  // by all the others (its slices come first); in the fewest messages, they go into one
  // dimension or are split between both.
  std::int64_t fewest = 0;
  if (kn.pending != 0) {
    const std::int64_t pending = size(kn.pending);
    words += mean_sent(pending, size.mn, size.ranks / pending);
    fewest = scatter_messages(pending);
    if ((kn.pending & (kn.pending - 1)) != 0)
      for (axis_mask part = (kn.pending - 1) & kn.pending; part != 0; part = (part - 1) & kn.pending) {
        const std::int64_t g = size(part);
        fewest = std::min(fewest, scatter_messages(g) + scatter_messages(pending / g));
      }
  }
  kn.messages_before_c = messages;
  kn.base = kn.bound = {size.scalar_bytes * words, messages + panels + fewest, size.scalar_bytes * held};
  // An axis on both m and n: C keeps it on one of them at most, so A gathers it (and the axes
  // after it) along m, or B along n, before the product.
  if (!grid && (kn.am & kn.bn) != 0) {
    const std::int64_t a_k = kn.match == match::gather ? 1 : kn.match == match::slice_a ? bk : ak;
    const std::int64_t b_k = kn.match == match::gather ? 1 : kn.match == match::slice_b ? ak : bk;
    for (axis_mask both = kn.am & kn.bn; both != 0; both &= both - 1) {
      const axis_mask axis = both & ~(both - 1);
      const axis_mask a_tail = kn.am & ~(axis - 1), b_tail = kn.bn & ~(axis - 1);
      const std::int64_t ga = size(a_tail), gb = size(b_tail);
      const std::int64_t a_split = (am / ga) * a_k, b_split = (bn / gb) * b_k;
      const std::int64_t a_words = mean_sent(ga, size.mk, a_split), b_words = mean_sent(gb, size.kn, b_split);
      kn.bound.bytes = std::max(kn.bound.bytes, kn.base.bytes + size.scalar_bytes * std::min(a_words, b_words));
      kn.bound.messages =
          std::max(kn.bound.messages, kn.base.messages + std::min(scatter_messages(ga), scatter_messages(gb)));
      kn.bound.footprint = std::max(kn.bound.footprint, kn.base.footprint + size.scalar_bytes *
                                                                                std::min(size.mk / a_split, size.kn / b_split));
    }
  }
  return true;
}

/// A plan of the standard or ring variant on a kernel (matmul_kernel), as the axis lists its
/// steps work over. Its schedule (plan_contraction_via's for its C, build_schedule writes it)
/// is, in order: A gathered along k over `ua` and B along n over `ub` (from their stored
/// layouts to the kernel's); A or B sliced along k to the other's split, or both gathered along
/// k; A gathered along m down to `m_kept` (a prefix of am) and B along n down to `n_kept` (of
/// bn), when C wants them so; the product, which leaves C [m_kept, n_kept] pending over the
/// kernel's pending axes; C sliced along m and along n over axes nothing uses, then
/// ReduceScattered into m and into n. A ring fuses the product with its one gather along k, or
/// with the ReduceScatter right after it. Every C stored once that such a kernel reaches is the
/// C of one of these (for_each_output enumerates them; the tests check it against the planner of
/// contraction.hpp).
struct output_plan {
  tensor_axes c{};
  axis_list am{}, ak{}, bk{}, bn{}, ua{}, ub{}, a_stored_k{}, b_stored_n{};
  axis_list a_k{}, b_k{};            ///< A's and B's split of k at the product
  axis_list m_kept{}, n_kept{};      ///< C's natural split
  axis_list m_sliced{}, n_sliced{};  ///< C's split after its slices
  axis_list m_gathered{}, n_gathered{}, m_slices{}, n_slices{};
  axis_list m_scatters{}, n_scatters{}, pending{};
  bool slice_a = false, slice_b = false, gather_a = false, gather_b = false, ring = false;
  bool m_slice = false, n_slice = false;
  plan_bound bound{};  ///< bytes and messages exactly when blocks divide evenly; footprint: the kernel's bound
};

/// Whether contraction.hpp's planner gathers A along m down to p.m_kept and B along n down to
/// p.n_kept for p's C (one of them at least shorter than the kernel's): where C's rows are not
/// reached from A's (a prefix of them, or they then ReduceScatters of `pending` axes), A is
/// gathered down to the prefix they share, when C's rows are then reached; the same for the
/// columns; then while an axis splits both, the rows, else the columns, are gathered down to
/// C's, when those lack it and start them.
constexpr bool gathers_inputs_so(const output_plan& p, axis_mask pending) {
  auto reachable = [&](const axis_list& have, const axis_list& want) {
    if (is_prefix(want, have)) return true;
    if (!is_prefix(have, want)) return false;
    for (std::size_t i = have.size(); i < want.size(); ++i)
      if (((pending >> want[i]) & 1u) == 0) return false;
    return true;
  };
  auto natural = [&](const axis_list& have, const axis_list& want) {
    if (reachable(have, want)) return have;
    const axis_list meet = common_prefix(have, want);
    return reachable(meet, want) ? meet : have;
  };
  axis_list m = natural(p.am, p.c.dim(0)), n = natural(p.bn, p.c.dim(1));
  for (;;) {
    int axis = -1;
    for (int a : m)
      if (axis < 0 && contains(n, a)) axis = a;
    if (axis < 0) break;
    if (!contains(p.c.dim(0), axis) && is_prefix(p.c.dim(0), m)) m = p.c.dim(0);
    else if (!contains(p.c.dim(1), axis) && is_prefix(p.c.dim(1), n)) n = p.c.dim(1);
    else return false;
  }
  return m == p.m_kept && n == p.n_kept;
}

/// Calls f(output_plan) for every plan of the standard or ring kernel `kn` (see output_plan)
/// whose bound is `wanted` (a plan_bound: its bytes and messages exact when blocks divide
/// evenly, and the kernel's footprint bound); in mesh order only within C's slices and scatters
/// unless `every_order` (when blocks divide evenly, the order of a dimension's axes changes no cost).
template <typename W, typename F>
constexpr void for_each_output(const block_geometry& mesh, const MatmulProblem& problem, const matmul_kernel& kn,
                               bool every_order, W&& wanted, F&& f) {
  const axis_mask all = (axis_mask{1} << mesh.ndim) - 1;
  const std::int64_t m = problem.shape.m, k = problem.shape.k, n = problem.shape.n;
  using match = matmul_kernel::k_match;
  const bool ring = kn.variant == VariantKind::ring;
  const bool fused_scatter = ring && kn.match != match::gather;
  const std::int64_t a_k_split = ranks_over(mesh, kn.match == match::gather ? 0 : kn.match == match::slice_a ? kn.bk : kn.ak);
  const std::int64_t b_k_split = ranks_over(mesh, kn.match == match::gather ? 0 : kn.match == match::slice_b ? kn.ak : kn.bk);
  output_plan p;
  bool listed = false;  // p's kernel lists, made for the first plan wanted
  auto list_kernel = [&] {
    listed = true;
    p.am = list_of(kn.am), p.ak = list_of(kn.ak), p.bk = list_of(kn.bk), p.bn = list_of(kn.bn);
    p.ua = list_of(all & ~(kn.am | kn.ak)), p.ub = list_of(all & ~(kn.bk | kn.bn));
    p.a_stored_k = concat(p.ak, p.ua), p.b_stored_n = concat(p.bn, p.ub);
    p.ring = ring;
    p.slice_a = kn.match == match::slice_a, p.slice_b = kn.match == match::slice_b;
    p.gather_a = kn.match == match::gather && kn.ak != 0, p.gather_b = kn.match == match::gather && kn.bk != 0;
    p.a_k = kn.match == match::gather ? axis_list{} : p.slice_a ? p.bk : p.ak;
    p.b_k = kn.match == match::gather ? axis_list{} : p.slice_b ? p.ak : p.bk;
    p.pending = list_of(kn.pending);
    p.c.rank = 2;
  };
  // A keeps the first axes of am along m (kept_m), B the first of bn along n (a ring gathers none).
  for (axis_mask kept_m = kn.am;; kept_m &= ~last_axis(kept_m)) {
    for (axis_mask kept_n = kn.bn;; kept_n &= ~last_axis(kept_n)) {
      const bool gather_m = kept_m != kn.am, gather_n = kept_n != kn.bn;
      if (!(ring && (gather_m || gather_n)) && (kept_m & kept_n) == 0) {
        // The input gathers, at their mean (exact when blocks divide evenly).
        plan_bound base = kn.base;
        base.messages = kn.messages_before_c;
        if (gather_m) {
          const std::int64_t g = ranks_over(mesh, kn.am & ~kept_m);
          base.bytes += problem.scalar_bytes * mean_sent(g, m * k, ranks_over(mesh, kept_m) * a_k_split);
          base.messages += scatter_messages(g);
        }
        if (gather_n) {
          const std::int64_t g = ranks_over(mesh, kn.bn & ~kept_n);
          base.bytes += problem.scalar_bytes * mean_sent(g, k * n, ranks_over(mesh, kept_n) * b_k_split);
          base.messages += scatter_messages(g);
        }
        // C: each axis not kept, not pending, is sliced into m or n; each pending one scattered.
        // An input gathered along a dimension leaves C's slices out of it (contraction.hpp); a
        // ring without a gather fuses the ReduceScatter right after the product (no slice).
        const axis_mask rest = all & ~(kept_m | kept_n);
        for (axis_mask to_m = rest; wanted(base); to_m = (to_m - 1) & rest) {
          const axis_mask m_slices = to_m & ~kn.pending, n_slices = rest & ~to_m & ~kn.pending;
          const axis_mask m_scatters = to_m & kn.pending, n_scatters = rest & ~to_m & kn.pending;
          plan_bound bound = base;
          bound.messages += (m_scatters != 0 ? scatter_messages(ranks_over(mesh, m_scatters)) : 0) +
                            (n_scatters != 0 ? scatter_messages(ranks_over(mesh, n_scatters)) : 0);
          if (!(gather_m && m_slices != 0) && !(gather_n && n_slices != 0) &&
              !(fused_scatter && (m_slices | n_slices) != 0) && wanted(bound)) {
            if (!listed) list_kernel();
            p.bound = bound;
            p.m_kept = list_of(kept_m), p.n_kept = list_of(kept_n);
            p.m_gathered = list_of(kn.am & ~kept_m), p.n_gathered = list_of(kn.bn & ~kept_n);
            p.m_slice = m_slices != 0, p.n_slice = n_slices != 0;
            axis_list ms = list_of(m_slices), mr = list_of(m_scatters), ns = list_of(n_slices), nr = list_of(n_scatters);
            do {
              do {
                do {
                  do {
                    p.m_slices = ms, p.n_slices = ns;
                    p.m_sliced = concat(p.m_kept, ms), p.n_sliced = concat(p.n_kept, ns);
                    p.m_scatters = mr, p.n_scatters = nr;
                    p.c.dim(0) = concat(p.m_sliced, mr), p.c.dim(1) = concat(p.n_sliced, nr);
                    if ((!gather_m && !gather_n) || gathers_inputs_so(p, kn.pending)) f(static_cast<const output_plan&>(p));
                  } while (every_order && std::next_permutation(nr.begin(), nr.end()));
                } while (every_order && std::next_permutation(ns.begin(), ns.end()));
              } while (every_order && std::next_permutation(mr.begin(), mr.end()));
            } while (every_order && std::next_permutation(ms.begin(), ms.end()));
          }
          if (to_m == 0) break;
        }
      }
      if (kept_n == 0) break;
    }
    if (kept_m == 0) break;
  }
}

/// The schedule of `p` (see output_plan), as plan_contraction_via writes it.
constexpr contraction_plan_data build_schedule(const output_plan& p, const tensor_axes& a, const tensor_axes& b) {
  contraction_plan_data plan;
  plan.start[Operand::A] = a;
  plan.start[Operand::B] = b;
  plan.start[Operand::C] = matrix_axes(p.m_kept, p.n_kept);
  plan.start[Operand::C].partial = p.pending;
  Schedule& s = plan.steps;
  if (!p.ua.empty()) s.push_back({StepKind::all_gather, Operand::A, 1, p.ua, {}});
  if (!p.ub.empty()) s.push_back({StepKind::all_gather, Operand::B, 1, p.ub, {}});
  if (p.slice_a) s.push_back({StepKind::slice, Operand::A, 1, tail(p.bk, p.ak.size()), {}});
  if (p.slice_b) s.push_back({StepKind::slice, Operand::B, 0, tail(p.ak, p.bk.size()), {}});
  const Step gather_a{StepKind::all_gather, Operand::A, 1, p.ak, {}}, gather_b{StepKind::all_gather, Operand::B, 0, p.bk, {}};
  if (p.gather_a && !p.ring) s.push_back(gather_a);
  if (p.m_kept.size() < p.am.size()) s.push_back({StepKind::all_gather, Operand::A, 0, tail(p.am, p.m_kept.size()), {}});
  if (p.gather_b && !p.ring) s.push_back(gather_b);
  if (p.n_kept.size() < p.bn.size()) s.push_back({StepKind::all_gather, Operand::B, 1, tail(p.bn, p.n_kept.size()), {}});
  const bool fused_scatter = p.ring && !p.gather_a && !p.gather_b;
  if (p.ring && p.gather_a) s.push_back({StepKind::ring_all_gather_gemm, Operand::A, 1, p.ak, {}});
  else if (p.ring && p.gather_b) s.push_back({StepKind::ring_all_gather_gemm, Operand::B, 0, p.bk, {}});
  else if (!fused_scatter) s.push_back({StepKind::local_gemm, Operand::C, -1, {}, {}});
  if (p.m_slice) s.push_back({StepKind::slice, Operand::C, 0, tail(p.m_sliced, p.m_kept.size()), {}});
  if (p.n_slice) s.push_back({StepKind::slice, Operand::C, 1, tail(p.n_sliced, p.n_kept.size()), {}});
  bool fuse = fused_scatter;
  if (!p.m_scatters.empty())
    s.push_back({fuse ? StepKind::ring_gemm_reduce_scatter : StepKind::reduce_scatter, Operand::C, 0, p.m_scatters, {}}),
        fuse = false;
  if (!p.n_scatters.empty())
    s.push_back({fuse ? StepKind::ring_gemm_reduce_scatter : StepKind::reduce_scatter, Operand::C, 1, p.n_scatters, {}});
  return plan;
}

/// A group of ranks along some axes: its size and this rank's place in it.
struct group_place {
  std::int64_t size = 1, rank = 0;
};
/// Along `axes`, at `geo`.
constexpr group_place place_along(const block_geometry& geo, const axis_list& axes) {
  group_place g;
  for (int a : axes) {
    const auto i = static_cast<std::size_t>(a);
    g.size *= geo.extents[i];
    g.rank = g.rank * geo.extents[i] + geo.coordinate[i];
  }
  return g;
}
/// Along x's axes, then y's.
constexpr group_place then(const group_place& x, const group_place& y) { return {x.size * y.size, x.rank * y.size + y.rank}; }
/// This rank's block of `n` items split over the group.
constexpr std::int64_t block_of(std::int64_t n, const group_place& g) { return block_size(n, g.size, g.rank); }
/// The block that member `g` of `gathered` holds within this rank's block over `kept`.
constexpr std::int64_t member_of(std::int64_t n, const group_place& kept, const group_place& gathered, std::int64_t g) {
  return block_size(n, kept.size * gathered.size, kept.rank * gathered.size + g);
}

/// What the rank at `geo` sends and holds (in bytes) running `p`: cost.hpp's step_traffic and
/// matmul_footprint on its schedule (build_schedule), step by step, without writing it.
constexpr plan_bound output_rank_costs(const block_geometry& geo, const MatmulProblem& problem, const output_plan& p) {
  const std::int64_t m = problem.shape.m, k = problem.shape.k, n = problem.shape.n, bytes = problem.scalar_bytes;
  Traffic sent;
  std::int64_t held = 0, ring = 0;
  const group_place m_kept = place_along(geo, p.m_kept), m_gathered = place_along(geo, p.m_gathered);
  const group_place n_kept = place_along(geo, p.n_kept), n_gathered = place_along(geo, p.n_gathered);
  const group_place ak = place_along(geo, p.ak), bk = place_along(geo, p.bk);
  const group_place ua = place_along(geo, p.ua), ub = place_along(geo, p.ub);
  const group_place am = then(m_kept, m_gathered), bn = then(n_kept, n_gathered);
  const std::int64_t am_m = block_of(m, am), ak_k = block_of(k, ak), bk_k = block_of(k, bk), bn_n = block_of(n, bn);
  auto gather = [&](std::int64_t total, std::int64_t next, std::int64_t g) {
    sent += ring_all_gather_traffic(total, next, static_cast<int>(g), bytes);
  };
  auto next = [](const group_place& g) { return (g.rank + 1) % g.size; };
  // A and B as stored, then gathered along k over ua to [am, ak] and along n over ub to [bk, bn].
  held += am_m * block_of(k, then(ak, ua)) + bk_k * block_of(n, then(bn, ub));
  if (!p.ua.empty()) {
    gather(am_m * ak_k, member_of(k, ak, ua, next(ua)) * am_m, ua.size);
    held += am_m * ak_k;
  }
  if (!p.ub.empty()) {
    gather(bk_k * bn_n, member_of(n, bn, ub, next(ub)) * bk_k, ub.size);
    held += bk_k * bn_n;
  }
  // k matched: a slice, or both gathered (a ring holds two chunks of the one it gathers).
  if (p.slice_a) held += am_m * bk_k;
  if (p.slice_b) held += ak_k * bn_n;
  if (p.gather_a) {
    gather(am_m * k, block_size(k, ak.size, next(ak)) * am_m, ak.size);
    if (p.ring) ring = 2 * ((k + ak.size - 1) / ak.size) * am_m;
    else held += am_m * k;
  }
  if (p.gather_b) {
    gather(k * bn_n, block_size(k, bk.size, next(bk)) * bn_n, bk.size);
    if (p.ring) ring = 2 * ((k + bk.size - 1) / bk.size) * bn_n;
    else held += k * bn_n;
  }
  // A along m down to m_kept, B along n down to n_kept.
  std::int64_t c_m = am_m, c_n = bn_n;
  if (!p.m_gathered.empty()) {
    const std::int64_t k_held = p.gather_a || p.gather_b ? k : p.slice_a ? bk_k : ak_k;
    c_m = block_of(m, m_kept);
    gather(c_m * k_held, member_of(m, m_kept, m_gathered, next(m_gathered)) * k_held, m_gathered.size);
    held += c_m * k_held;
  }
  if (!p.n_gathered.empty()) {
    const std::int64_t k_held = p.gather_a || p.gather_b ? k : p.slice_b ? ak_k : bk_k;
    c_n = block_of(n, n_kept);
    gather(k_held * c_n, member_of(n, n_kept, n_gathered, next(n_gathered)) * k_held, n_gathered.size);
    held += k_held * c_n;
  }
  // The product, then C's steps: each but the last writes one of two buffers in turn.
  std::int64_t buffers[2] = {0, 0};
  int next_buffer = 0;
  int steps_left = int{p.m_slice} + int{p.n_slice} + int{!p.m_scatters.empty()} + int{!p.n_scatters.empty()};
  auto hold = [&](std::int64_t elements) {
    if (steps_left == 0) return;  // the last step writes the output
    buffers[next_buffer] = std::max(buffers[next_buffer], elements);
    next_buffer = 1 - next_buffer;
  };
  const bool fused_scatter = p.ring && !p.gather_a && !p.gather_b;
  if (!fused_scatter) hold(c_m * c_n);
  const group_place m_sliced = then(m_kept, place_along(geo, p.m_slices));
  const group_place n_sliced = then(n_kept, place_along(geo, p.n_slices));
  if (p.m_slice) {
    c_m = block_of(m, m_sliced);
    --steps_left;
    hold(c_m * c_n);
  }
  if (p.n_slice) {
    c_n = block_of(n, n_sliced);
    --steps_left;
    hold(c_m * c_n);
  }
  auto scatter = [&](const group_place& g, std::int64_t total, std::int64_t own, std::int64_t after) {
    sent += ring_reduce_scatter_traffic(total, own, static_cast<int>(g.size), bytes);
    if (fused_scatter && ring == 0) ring = 3 * (total / g.size + m + n);
    --steps_left;
    hold(after);
  };
  if (!p.m_scatters.empty()) {
    const group_place g = place_along(geo, p.m_scatters);
    const std::int64_t final_m = block_of(m, then(m_sliced, g));
    scatter(g, c_m * c_n, member_of(m, m_sliced, g, g.rank) * c_n, final_m * c_n);
    c_m = final_m;
  }
  if (!p.n_scatters.empty()) {
    const group_place g = place_along(geo, p.n_scatters);
    const std::int64_t final_n = block_of(n, then(n_sliced, g));
    scatter(g, c_m * c_n, member_of(n, n_sliced, g, g.rank) * c_m, c_m * final_n);
    c_n = final_n;
  }
  held += c_m * c_n + buffers[0] + buffers[1] + ring;
  // A last ReduceScatter into m lands apart when C is stored column-major (its columns split).
  if (!p.m_scatters.empty() && p.n_scatters.empty() && !p.c.dim(1).empty()) held += c_m * c_n;
  return {sent.bytes, sent.messages, bytes * held};
}

/// Calls f(kernel) for the kernels of the search on `ndim` axes: each axis's role in A's kernel
/// (m, k or none) and in B's (k, n or none), the standard and ring variants; and for SUMMA and
/// 2.5D each axis splitting A's m and B's k, A's k and B's n, neither, or a layer. With
/// `canonical`, axes of equal extents are interchangeable (blocks that divide evenly): of the
/// assignments that differ only by exchanging such axes, only the one whose roles do not
/// decrease along them.
template <typename F>
constexpr void for_each_kernel(const block_geometry& mesh, bool canonical, F&& f) {
  const int d = mesh.ndim;
  // Each axis's nearest earlier axis of the same extent (-1: none), when they are interchangeable.
  std::array<int, max_mesh_axes> twin{};
  bool twins = false;
  for (int a = 0; a < d; ++a) {
    twin[static_cast<std::size_t>(a)] = -1;
    for (int b = 0; canonical && b < a; ++b)
      if (mesh.extents[static_cast<std::size_t>(b)] == mesh.extents[static_cast<std::size_t>(a)])
        twin[static_cast<std::size_t>(a)] = b, twins = true;
  }
  // An odometer over the axes' roles, the kernel's axis sets kept up to date digit by digit.
  std::array<int, max_mesh_axes> role{};
  auto walk = [&](int base, auto place, auto visit) {
    matmul_kernel kn;
    role = {};
    for (int a = 0; a < d; ++a) place(kn, a, 0, true);
    for (;;) {
      bool ordered = true;
      if (twins)
        for (int a = 0; a < d && ordered; ++a)
          ordered = twin[static_cast<std::size_t>(a)] < 0 ||
                    role[static_cast<std::size_t>(twin[static_cast<std::size_t>(a)])] <= role[static_cast<std::size_t>(a)];
      if (ordered) visit(kn);
      int a = d - 1;
      for (; a >= 0; --a) {
        int& r = role[static_cast<std::size_t>(a)];
        place(kn, a, r, false);
        r = r + 1 < base ? r + 1 : 0;
        place(kn, a, r, true);
        if (r != 0) break;
      }
      if (a < 0) return;
    }
  };
  // Standard and ring: role r puts the axis in A's m, k or neither (r / 3) and B's k, n or neither (r % 3).
  walk(
      9,
      [](matmul_kernel& kn, int a, int r, bool on) {
        const axis_mask bit = axis_mask{1} << a;
        axis_mask* in_a = r / 3 == 0 ? &kn.am : r / 3 == 1 ? &kn.ak : nullptr;
        axis_mask* in_b = r % 3 == 0 ? &kn.bk : r % 3 == 1 ? &kn.bn : nullptr;
        if (in_a != nullptr) *in_a = on ? *in_a | bit : *in_a & ~bit;
        if (in_b != nullptr) *in_b = on ? *in_b | bit : *in_b & ~bit;
      },
      [&](matmul_kernel kn) {
        kn.variant = VariantKind::standard;
        f(kn);
        // A ring overlaps one gather along k (A's or B's split of it, not both) or the
        // ReduceScatter of a shared one.
        if (kn.ak == kn.bk ? kn.ak != 0 : (kn.ak == 0) != (kn.bk == 0)) {
          kn.variant = VariantKind::ring;
          f(kn);
        }
      });
  // SUMMA and 2.5D: role 0 splits A's m and B's k, 1 A's k and B's n, 2 neither, 3 is a layer.
  walk(
      4,
      [](matmul_kernel& kn, int a, int r, bool on) {
        const axis_mask bit = axis_mask{1} << a;
        axis_mask* first = r == 0 ? &kn.am : r == 1 ? &kn.ak : r == 3 ? &kn.layers : nullptr;
        axis_mask* second = r == 0 ? &kn.bk : r == 1 ? &kn.bn : nullptr;
        if (first != nullptr) *first = on ? *first | bit : *first & ~bit;
        if (second != nullptr) *second = on ? *second | bit : *second & ~bit;
      },
      [&](matmul_kernel kn) {
        if (kn.am == 0 || kn.ak == 0) return;
        kn.variant = kn.layers != 0 ? VariantKind::summa_25d : VariantKind::summa;
        f(kn);
      });
}

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
      if (busier({here.bytes, here.messages}, {costs.bytes, costs.messages})) costs.bytes = here.bytes, costs.messages = here.messages;
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

}  // namespace detail

/// The cheapest plan for `problem` on a mesh given by its extents (see the top of this file).
/// Throws std::invalid_argument (in a constant evaluation: a compile error) for an extent m, k or
/// n below 0, scalar_bytes below 1, a negative budget, or a mesh extent below 1.
constexpr MatmulChoice plan_matmul(const detail::block_geometry& mesh, const MatmulProblem& problem) {
  using namespace detail;
  check_planner_mesh("shardwise::plan_matmul", mesh);
  check_matmul_problem("shardwise::plan_matmul", problem);
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
    MatmulChoice choice = plan_matmul(kept, problem);
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

/// The same for a mesh type (its extents as the object gives them).
template <MeshType M>
constexpr MatmulChoice plan_matmul(const M& mesh, const MatmulProblem& problem) {
  return plan_matmul(detail::block_geometry(mesh, typename M::coordinate_type{}), problem);
}

/// A plan, the mesh it runs on, and the ranks it leaves idle: the mesh is laid over ranks 0 to
/// ranks_used() - 1 of the `ranks` planned for; the others hold no block and send nothing.
struct MeshedMatmulChoice {
  MatmulChoice choice{};            ///< The plan; `found` false when none fits on any mesh.
  detail::block_geometry mesh{};    ///< Its mesh (extents; coordinates zero).
  int ranks = 0;                    ///< The ranks planned for (the communicator's).

  /// The ranks the plan runs on: the mesh's size (0 when none was found).
  [[nodiscard]] constexpr int ranks_used() const {
    if (!choice.found) return 0;
    int used = 1;
    for (int a = 0; a < mesh.ndim; ++a) used *= mesh.extents[static_cast<std::size_t>(a)];
    return used;
  }
  /// Ranks ranks_used() .. ranks - 1: in none of the plan's groups.
  [[nodiscard]] constexpr int idle_ranks() const { return choice.found ? ranks - ranks_used() : 0; }

  /// "2 x 3 mesh on ranks 0-5 of 7 (rank 6 idle): A[x, y] B[x, y] C[x, y]: SUMMA: Broadcast ...",
  /// the mesh axes named x, y, z, w, ... in order.
  [[nodiscard]] std::string describe() const {
    if (!choice.found) return "no plan fits the budget";
    static constexpr std::string_view names[] = {"x", "y", "z", "w", "v", "u", "t", "s", "r", "q", "p", "o", "l", "j", "i", "h"};
    std::string text;
    for (int a = 0; a < mesh.ndim; ++a) text += (a ? " x " : "") + std::to_string(mesh.extents[static_cast<std::size_t>(a)]);
    const int used = ranks_used();
    text += " mesh on ";
    text += used == 1 ? std::string("rank 0") : "ranks 0-" + std::to_string(used - 1);
    text += " of " + std::to_string(ranks);
    if (used < ranks)
      text += used + 1 == ranks ? " (rank " + std::to_string(used) + " idle)"
                                : " (ranks " + std::to_string(used) + "-" + std::to_string(ranks - 1) + " idle)";
    auto layout = [&](const detail::tensor_axes& t) {
      return "[" + detail::axes_text_of(t.dim(0), names) + ", " + detail::axes_text_of(t.dim(1), names) + "]";
    };
    text += ": A" + layout(choice.a) + " B" + layout(choice.b) + " C" + layout(choice.c) + ": ";
    text += choice.plan.steps.empty() ? std::string("local GEMM")
                                      : detail::describe_schedule(choice.plan.steps, detail::matmul_names, names);
    return text;
  }
};

/// How plan_matmul_any_mesh may use the ranks.
struct AnyMeshOptions {
  /// Whether the plan may run on fewer ranks than given, leaving the others idle (the caller
  /// then runs it on the first ranks_used(), a sub-communicator): when that sends fewer bytes
  /// from the busiest rank by a larger factor than it gives each rank more of the product, as a
  /// prime number of ranks may (7 ranks: a 1-D ring; 6: a 2 x 3 grid).
  bool allow_idle = false;
  /// The largest share of the ranks a plan may leave idle.
  double max_idle_share = 0.25;

  /// The fewest of `ranks` ranks a plan may run on: all of them unless allow_idle, else
  /// (1 - max_idle_share) of them rounded up, and at least 2 (a 1-rank plan computes it all).
  /// One definition for the planner and for peers that search grids the same way.
  constexpr int fewest_ranks(int ranks) const {
    if (!allow_idle) return ranks;
    const int fewest = static_cast<int>(static_cast<double>(ranks) * (1 - max_idle_share) + 0.999999);
    return std::max(fewest, std::min(ranks, 2));
  }
};

/// Every mesh of `ranks` ranks with one to three axes, the later ones of at least 2 and the
/// extents non-increasing: {P}, {P/a, a}, {P/a/b, b, a}.
constexpr std::vector<detail::block_geometry> meshes_of(int ranks) {
  if (ranks < 1) throw std::invalid_argument("shardwise::meshes_of: the number of ranks is " + detail::decimal(ranks) + "; give at least 1");
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
/// redistributed anyway, as the ScaLAPACK drop-in does, the mesh is a choice too. With
/// `options.allow_idle`, also over the meshes of fewer ranks, down to (1 - max_idle_share) of
/// them (and at least 2): a plan on P' of P ranks is compared by its busiest rank's bytes times
/// P / P' (each of its ranks computes P / P' times a full share), so that idling pays only
/// where it cuts the bytes by more. Fewer ranks are skipped where the lower bound
/// (matmul_lower_bound, times P / P') already exceeds the best found.
/// Throws std::invalid_argument (in a constant evaluation: a compile error) for fewer than 1
/// rank or a problem plan_matmul refuses.
constexpr MeshedMatmulChoice plan_matmul_any_mesh(int ranks, const MatmulProblem& problem,
                                                  const AnyMeshOptions& options = {}) {
  if (ranks < 1) throw std::invalid_argument("shardwise::plan_matmul_any_mesh: the number of ranks is " + detail::decimal(ranks) + "; give at least 1");
  detail::check_matmul_problem("shardwise::plan_matmul_any_mesh", problem);
  MeshedMatmulChoice best;
  best.ranks = ranks;
  double best_weight = 0;
  auto consider = [&](int used) {
    const double scale = static_cast<double>(ranks) / used;
    for (const detail::block_geometry& g : meshes_of(used)) {
      const MatmulChoice c = plan_matmul(g, problem);
      if (!c.found) continue;
      const double weight = static_cast<double>(c.traffic.bytes) * scale;
      const bool better = !best.choice.found || weight < best_weight ||
                          (weight == best_weight && used == best.ranks_used() && detail::cheaper(c, best.choice));
      if (better) best = {c, g, ranks}, best_weight = weight;
    }
  };
  consider(ranks);
  if (!options.allow_idle) return best;
  for (int used = ranks - 1; used >= options.fewest_ranks(ranks); --used) {
    const double bound = static_cast<double>(problem.scalar_bytes) *
                         matmul_lower_bound(problem.shape.m, problem.shape.k, problem.shape.n, used).words *
                         static_cast<double>(ranks) / used;
    // The bound holds for balanced blocks; a margin keeps uneven ones in.
    if (best.choice.found && bound > 1.01 * best_weight) continue;
    consider(used);
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
