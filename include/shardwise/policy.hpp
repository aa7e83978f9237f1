// shardwise/policy.hpp: which matmul kernel runs, and what it communicates.
//
// From the mesh and the shardings of A[m,k] and B[k,n], the compiler picks one of
// five policy families and writes the schedule as data: a short constexpr list of
// steps (which collective, on which operand, along which dimension, over which
// axes, and where the local GEMM goes). The cost model and describe() read that
// list, and the kernels in matmul.hpp execute it, so the three cannot drift apart.
// Pure compile-time: no MPI, no Eigen.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "shardwise/detail/partition.hpp"
#include "shardwise/detail/static_vector.hpp"
#include "shardwise/detail/traffic.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

/// The five policy families. Write am, ak for the axes splitting A's rows and
/// columns, bk, bn for B's. Every pair of shardings falls in exactly one.
namespace policy {
/// am = ak = bk = bn = none: every rank multiplies whole matrices.
struct Unsharded { static constexpr std::string_view name = "Unsharded"; };
/// ak = bk (not none), am = bn = none: local GEMM gives a partial C, then AllReduce over ak.
struct MatchedInner { static constexpr std::string_view name = "MatchedInner"; };
/// ak != bk, am = bn = none: AllGather A and B along k, then a local GEMM.
struct UnmatchedInner { static constexpr std::string_view name = "UnmatchedInner"; };
/// Exactly one of am, bn split: C keeps that split.
struct Outer { static constexpr std::string_view name = "Outer"; };
/// Both am and bn split: C = [am, bn].
struct Full { static constexpr std::string_view name = "Full"; };
}  // namespace policy

/// How a schedule is executed. The bytes moved are the same for standard and ring.
namespace variant {
/// Collectives, then the GEMM (or the GEMM, then collectives).
struct Standard { static constexpr std::string_view name = "standard"; };
/// The one AllGather along k (or the one ReduceScatter) runs as a ring of
/// nonblocking messages, each block multiplied while the next is in flight.
struct Ring { static constexpr std::string_view name = "ring"; };
/// SUMMA for A = [X, Y], B = [X, Y]: panels of at most PanelWidth columns of A are
/// broadcast over Y and rows of B over X, one GEMM per panel; no operand is gathered whole.
template <int PanelWidth = 256>
struct Summa {
  static_assert(PanelWidth >= 1, "shardwise::variant::Summa: the panel width must be at least 1");
  static constexpr std::string_view name = "summa";
  static constexpr int panel_width = PanelWidth;
};
}  // namespace variant

inline constexpr variant::Standard standard{};
inline constexpr variant::Ring ring{};
inline constexpr variant::Summa<> summa{};

/// Ask matmul for the output the policy produces without extra communication: C = [am, bn].
struct NaturalOutput {};

/// Global matmul shape: C[m,n] = A[m,k] * B[k,n].
struct MatmulShape {
  std::int64_t m = 0, k = 0, n = 0;
  friend constexpr bool operator==(const MatmulShape&, const MatmulShape&) = default;
};

/// What one step of a schedule does.
enum class StepKind : unsigned char {
  all_gather,                ///< AllGather `operand` along `dim` over `axes`
  reduce_scatter,            ///< ReduceScatter C along `dim` over `axes`
  all_reduce,                ///< AllReduce C over `axes`
  local_gemm,                ///< C (or a partial C) = A * B on the local blocks
  ring_all_gather_gemm,      ///< ring AllGather of `operand` along k over `axes`, GEMM per block in hand
  ring_gemm_reduce_scatter,  ///< GEMM chunk by chunk while a ring ReduceScatters C along `dim` over `axes`
  summa_gemm,                ///< broadcast A panels over `axes`, B panels over `axes2`, GEMM per panel
};

enum class Operand : unsigned char { A, B, C };

/// One step of a schedule. `dim` is the operand's dimension (A: 1 is k; B: 0 is k;
/// C: 0 is m, 1 is n); `axes` are mesh axis indices, major first.
struct Step {
  StepKind kind{};
  Operand operand = Operand::C;
  int dim = -1;
  detail::axis_list axes{};
  detail::axis_list axes2{};
  friend constexpr bool operator==(const Step&, const Step&) = default;
};

/// A schedule: the steps of one matmul (or one reshard), in order.
using Schedule = detail::static_vector<Step, 12>;

namespace detail {

// ---- small constexpr list algebra ---------------------------------------------

constexpr bool contains(const axis_list& list, int axis) {
  for (int a : list)
    if (a == axis) return true;
  return false;
}
constexpr bool intersects(const axis_list& a, const axis_list& b) {
  for (int x : a)
    if (contains(b, x)) return true;
  return false;
}
constexpr bool intersects_names(const name_list& a, const name_list& b) {
  for (auto x : a)
    for (auto y : b)
      if (x == y) return true;
  return false;
}
constexpr bool is_subset(const axis_list& a, const axis_list& b) {
  for (int x : a)
    if (!contains(b, x)) return false;
  return true;
}
constexpr bool is_prefix(const axis_list& prefix, const axis_list& list) {
  if (prefix.size() > list.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (prefix[i] != list[i]) return false;
  return true;
}
constexpr axis_list tail(const axis_list& list, std::size_t from) {
  axis_list result;
  for (std::size_t i = from; i < list.size(); ++i) result.push_back(list[i]);
  return result;
}
constexpr axis_list without(const axis_list& list, const axis_list& removed) {
  axis_list result;
  for (int a : list)
    if (!contains(removed, a)) result.push_back(a);
  return result;
}
constexpr axis_list concat(const axis_list& a, const axis_list& b) {
  axis_list result = a;
  for (int x : b) result.push_back(x);
  return result;
}

// ---- policy selection and plan construction -----------------------------------

enum class PolicyKind { unsharded, matched_inner, unmatched_inner, outer, full };
enum class VariantKind { standard, ring, summa };

enum class PlanError {
  none,
  same_axis_splits_m_and_n,
  output_partial_not_pending,
  output_rows_unreachable,
  output_cols_unreachable,
  ring_needs_one_gather_or_scatter,
  summa_needs_grid_layout,
};

constexpr PolicyKind classify(const resolved_sharding<2>& a, const resolved_sharding<2>& b) {
  const axis_list &am = a.dims[0], &ak = a.dims[1], &bk = b.dims[0], &bn = b.dims[1];
  if (am.empty() && bn.empty()) {
    if (ak.empty() && bk.empty()) return PolicyKind::unsharded;
    return ak == bk ? PolicyKind::matched_inner : PolicyKind::unmatched_inner;
  }
  return (am.empty() || bn.empty()) ? PolicyKind::outer : PolicyKind::full;
}

struct reshard_data {
  static_vector<Step, 6> steps;
  PlanError error = PlanError::none;
};

/// From C = [have_m, have_n] with a pending sum over `pending`, reach
/// [want_m, want_n] with a pending sum over `want_partial`. Each dimension may keep
/// its axes, drop minor ones (AllGather), or gain pending axes as minor ones
/// (ReduceScatter); pending axes not kept or scattered are AllReduced. Anything
/// else would be a silent reshuffle and is refused.
constexpr reshard_data reshard_steps(const std::array<axis_list, 2>& have, const axis_list& pending,
                                     const std::array<axis_list, 2>& want,
                                     const axis_list& want_partial) {
  reshard_data result;
  if (!is_subset(want_partial, pending)) {
    result.error = PlanError::output_partial_not_pending;
    return result;
  }
  const axis_list reduce = without(pending, want_partial);
  std::array<axis_list, 2> gather{}, scatter{};
  for (int d = 0; d < 2; ++d) {
    if (is_prefix(want[d], have[d])) {
      gather[d] = tail(have[d], want[d].size());
    } else if (is_prefix(have[d], want[d]) && is_subset(tail(want[d], have[d].size()), reduce)) {
      scatter[d] = tail(want[d], have[d].size());
    } else {
      result.error = d == 0 ? PlanError::output_rows_unreachable : PlanError::output_cols_unreachable;
      return result;
    }
  }
  for (int d = 0; d < 2; ++d)
    if (!scatter[d].empty()) result.steps.push_back({StepKind::reduce_scatter, Operand::C, d, scatter[d], {}});
  const axis_list all_reduce = without(reduce, concat(scatter[0], scatter[1]));
  if (!all_reduce.empty()) result.steps.push_back({StepKind::all_reduce, Operand::C, -1, all_reduce, {}});
  // Columns first: for a column-major block that gather is contiguous.
  for (int d = 1; d >= 0; --d)
    if (!gather[d].empty()) result.steps.push_back({StepKind::all_gather, Operand::C, d, gather[d], {}});
  return result;
}

struct plan_data {
  PolicyKind policy = PolicyKind::unsharded;
  Schedule steps;
  PlanError error = PlanError::none;
};

constexpr plan_data make_plan(const resolved_sharding<2>& a, const resolved_sharding<2>& b,
                              const resolved_sharding<2>& c, VariantKind variant) {
  plan_data plan;
  const axis_list &am = a.dims[0], &ak = a.dims[1], &bk = b.dims[0], &bn = b.dims[1];
  plan.policy = classify(a, b);
  if (intersects(am, bn)) {
    plan.error = PlanError::same_axis_splits_m_and_n;
    return plan;
  }
  axis_list pending;
  if (variant == VariantKind::summa) {
    if (am.empty() || ak.empty() || !(am == bk) || !(ak == bn)) {
      plan.error = PlanError::summa_needs_grid_layout;
      return plan;
    }
    plan.steps.push_back({StepKind::summa_gemm, Operand::C, -1, ak, bk});
  } else {
    if (ak == bk) {
      pending = ak;  // matched k blocks: the GEMM leaves a sum over ak pending
    } else {
      if (!ak.empty()) plan.steps.push_back({StepKind::all_gather, Operand::A, 1, ak, {}});
      if (!bk.empty()) plan.steps.push_back({StepKind::all_gather, Operand::B, 0, bk, {}});
    }
    plan.steps.push_back({StepKind::local_gemm, Operand::C, -1, {}, {}});
  }
  const reshard_data tail_steps = reshard_steps({am, bn}, pending, c.dims, c.partial);
  if (tail_steps.error != PlanError::none) {
    plan.error = tail_steps.error;
    return plan;
  }
  for (const Step& step : tail_steps.steps) plan.steps.push_back(step);

  if (variant == VariantKind::ring) {
    // Fuse the single k-gather (or the scatter right after the GEMM) with the GEMM.
    int gathers = 0, gather_at = -1, gemm_at = -1;
    for (std::size_t i = 0; i < plan.steps.size(); ++i) {
      const Step& s = plan.steps[i];
      if (s.kind == StepKind::all_gather && s.operand != Operand::C) ++gathers, gather_at = static_cast<int>(i);
      if (s.kind == StepKind::local_gemm) gemm_at = static_cast<int>(i);
    }
    Schedule fused;
    const auto gemm = static_cast<std::size_t>(gemm_at);
    if (gathers == 1) {
      for (std::size_t i = 0; i < plan.steps.size(); ++i) {
        if (static_cast<int>(i) == gather_at) continue;
        if (i == gemm) {
          const Step& g = plan.steps[static_cast<std::size_t>(gather_at)];
          fused.push_back({StepKind::ring_all_gather_gemm, g.operand, g.dim, g.axes, {}});
        } else {
          fused.push_back(plan.steps[i]);
        }
      }
    } else if (gathers == 0 && gemm + 1 < plan.steps.size() &&
               plan.steps[gemm + 1].kind == StepKind::reduce_scatter) {
      for (std::size_t i = 0; i < plan.steps.size(); ++i) {
        if (i == gemm + 1) continue;
        if (i == gemm) {
          const Step& rs = plan.steps[gemm + 1];
          fused.push_back({StepKind::ring_gemm_reduce_scatter, Operand::C, rs.dim, rs.axes, {}});
        } else {
          fused.push_back(plan.steps[i]);
        }
      }
    } else {
      plan.error = PlanError::ring_needs_one_gather_or_scatter;
      return plan;
    }
    plan.steps = fused;
  }
  return plan;
}

// [am, bn], or a replicated placeholder where that is no valid sharding (wrong ranks,
// or am and bn sharing an axis), so that only the error that names the cause is reported.
template <typename ShA, typename ShB, bool InputsValid>
struct natural_output {
  using type = replicated_sharding_t<2>;
};
template <typename ShA, typename ShB>
  requires(!intersects_names(ShA::dim_axes[0], ShB::dim_axes[1]))
struct natural_output<ShA, ShB, true> {
  using type = TensorSharding<typename ShA::template dim<0>, typename ShB::template dim<1>>;
};

template <PolicyKind K> struct policy_type;
template <> struct policy_type<PolicyKind::unsharded> { using type = policy::Unsharded; };
template <> struct policy_type<PolicyKind::matched_inner> { using type = policy::MatchedInner; };
template <> struct policy_type<PolicyKind::unmatched_inner> { using type = policy::UnmatchedInner; };
template <> struct policy_type<PolicyKind::outer> { using type = policy::Outer; };
template <> struct policy_type<PolicyKind::full> { using type = policy::Full; };

template <typename V> struct variant_traits;
template <> struct variant_traits<variant::Standard> {
  static constexpr VariantKind kind = VariantKind::standard;
  static constexpr int panel_width = 0;
};
template <> struct variant_traits<variant::Ring> {
  static constexpr VariantKind kind = VariantKind::ring;
  static constexpr int panel_width = 0;
};
template <int W> struct variant_traits<variant::Summa<W>> {
  static constexpr VariantKind kind = VariantKind::summa;
  static constexpr int panel_width = W;
};
template <typename V>
concept MatmulVariant = requires { variant_traits<V>::kind; };

// ---- where each rank's blocks are ------------------------------------------------

/// Sizes and positions of one rank's blocks; shared by the cost model and the kernels.
template <MeshType M>
struct block_geometry {
  const M& mesh;
  typename M::coordinate_type coordinate;

  /// Ranks along `axes` (product of their extents).
  constexpr int group_size(const axis_list& axes) const {
    int size = 1;
    for (int a : axes) size *= mesh.extent(static_cast<std::size_t>(a));
    return size;
  }
  /// This rank's position along `axes`, first axis major: its rank in that group.
  constexpr int group_rank(const axis_list& axes) const {
    int rank = 0;
    for (int a : axes) rank = rank * mesh.extent(static_cast<std::size_t>(a)) + coordinate[static_cast<std::size_t>(a)];
    return rank;
  }
  /// Extent of this rank's block of a dimension of `global` items split over `axes`.
  constexpr std::int64_t extent(std::int64_t global, const axis_list& axes) const {
    return block_size(global, group_size(axes), group_rank(axes));
  }
  /// Offset of this rank's block.
  constexpr std::int64_t offset(std::int64_t global, const axis_list& axes) const {
    return block_begin(global, group_size(axes), group_rank(axes));
  }
  /// A dimension currently split over `kept ++ gathered`: the extent of the block that
  /// group rank `g` of `gathered` holds, within this rank's block over `kept`.
  constexpr std::int64_t gathered_block(std::int64_t global, const axis_list& kept,
                                        const axis_list& gathered, int g) const {
    const int parts = group_size(kept) * group_size(gathered);
    return block_size(global, parts, group_rank(kept) * group_size(gathered) + g);
  }
};

/// One SUMMA panel: k range, and the group ranks that own it in A's and B's k split.
struct summa_panel {
  std::int64_t begin = 0, width = 0;
  int a_root = 0, b_root = 0;
};

/// Calls f(panel) for every panel of k: the common refinement of A's k blocks
/// (split in `a_parts`) and B's (in `b_parts`), cut to at most `max_width`.
template <typename F>
constexpr void for_each_summa_panel(std::int64_t k, int a_parts, int b_parts, int max_width, F&& f) {
  int a_block = 0, b_block = 0;
  for (std::int64_t begin = 0; begin < k;) {
    while (block_begin(k, a_parts, a_block + 1) <= begin) ++a_block;
    while (block_begin(k, b_parts, b_block + 1) <= begin) ++b_block;
    std::int64_t end = begin + max_width;
    if (block_begin(k, a_parts, a_block + 1) < end) end = block_begin(k, a_parts, a_block + 1);
    if (block_begin(k, b_parts, b_block + 1) < end) end = block_begin(k, b_parts, b_block + 1);
    f(summa_panel{begin, end - begin, a_block, b_block});
    begin = end;
  }
}

/// Sharding state of A, B and C while a schedule runs.
struct operand_state {
  std::array<axis_list, 2> a{}, b{}, c{};
  constexpr std::array<axis_list, 2>& of(Operand op) { return op == Operand::A ? a : op == Operand::B ? b : c; }
};

/// Global extents of an operand.
constexpr std::array<std::int64_t, 2> global_extents(Operand op, const MatmulShape& s) {
  if (op == Operand::A) return {s.m, s.k};
  if (op == Operand::B) return {s.k, s.n};
  return {s.m, s.n};
}

/// Bytes and messages this rank sends to run `steps`, given the starting state.
template <MeshType M>
constexpr Traffic schedule_traffic(const Schedule& steps, operand_state state, const M& mesh,
                                   const typename M::coordinate_type& coordinate, const MatmulShape& shape,
                                   std::int64_t scalar_bytes, int panel_width) {
  const block_geometry<M> geo{mesh, coordinate};
  Traffic total;
  auto gather_traffic = [&](Operand op, int dim, const axis_list& axes) {
    auto& dims = state.of(op);
    const auto global = global_extents(op, shape);
    const axis_list& current = dims[static_cast<std::size_t>(dim)];  // prefix ++ axes
    axis_list prefix;
    for (std::size_t i = 0; i + axes.size() < current.size(); ++i) prefix.push_back(current[i]);
    const std::int64_t other = geo.extent(global[static_cast<std::size_t>(1 - dim)], dims[static_cast<std::size_t>(1 - dim)]);
    const int group = geo.group_size(axes);
    const int next = (geo.group_rank(axes) + 1) % group;
    const std::int64_t whole = geo.extent(global[static_cast<std::size_t>(dim)], prefix) * other;
    const std::int64_t next_block = geo.gathered_block(global[static_cast<std::size_t>(dim)], prefix, axes, next) * other;
    dims[static_cast<std::size_t>(dim)] = prefix;
    return ring_all_gather_traffic(whole, next_block, group, scalar_bytes);
  };
  auto scatter_traffic = [&](int dim, const axis_list& axes) {
    auto& dims = state.c;
    const auto global = global_extents(Operand::C, shape);
    const std::int64_t other = geo.extent(global[static_cast<std::size_t>(1 - dim)], dims[static_cast<std::size_t>(1 - dim)]);
    const axis_list grown = concat(dims[static_cast<std::size_t>(dim)], axes);
    const std::int64_t whole = geo.extent(global[static_cast<std::size_t>(dim)], dims[static_cast<std::size_t>(dim)]) * other;
    const std::int64_t own = geo.extent(global[static_cast<std::size_t>(dim)], grown) * other;
    dims[static_cast<std::size_t>(dim)] = grown;
    return ring_reduce_scatter_traffic(whole, own, geo.group_size(axes), scalar_bytes);
  };
  for (const Step& step : steps) {
    switch (step.kind) {
      case StepKind::all_gather:
      case StepKind::ring_all_gather_gemm:
        total += gather_traffic(step.operand, step.dim, step.axes);
        break;
      case StepKind::reduce_scatter:
      case StepKind::ring_gemm_reduce_scatter:
        total += scatter_traffic(step.dim, step.axes);
        break;
      case StepKind::all_reduce: {
        const std::int64_t n = geo.extent(shape.m, state.c[0]) * geo.extent(shape.n, state.c[1]);
        total += ring_all_reduce_traffic(n, geo.group_size(step.axes), geo.group_rank(step.axes), scalar_bytes);
        break;
      }
      case StepKind::local_gemm:
        break;
      case StepKind::summa_gemm: {
        const axis_list &row_axes = step.axes, &col_axes = step.axes2;  // A over row_axes, B over col_axes
        const std::int64_t m_local = geo.extent(shape.m, state.a[0]);
        const std::int64_t n_local = geo.extent(shape.n, state.b[1]);
        const int a_group = geo.group_size(row_axes), b_group = geo.group_size(col_axes);
        const int a_rank = geo.group_rank(row_axes), b_rank = geo.group_rank(col_axes);
        for_each_summa_panel(shape.k, a_group, b_group, panel_width, [&](const summa_panel& p) {
          total += chain_broadcast_traffic(m_local * p.width, a_group, a_rank, p.a_root, scalar_bytes);
          total += chain_broadcast_traffic(p.width * n_local, b_group, b_rank, p.b_root, scalar_bytes);
        });
        break;
      }
    }
  }
  return total;
}

/// Elements this rank holds while running `steps`: its A, B and C blocks plus the
/// buffers the schedule names (gathered operands, C between steps, ring chunks, SUMMA
/// panels). Copies made only to change a storage order are not counted.
template <MeshType M>
constexpr std::int64_t schedule_footprint(const Schedule& steps, operand_state state,
                                          const std::array<axis_list, 2>& output, const M& mesh,
                                          const typename M::coordinate_type& coordinate, const MatmulShape& shape,
                                          int panel_width) {
  const block_geometry<M> geo{mesh, coordinate};
  auto elements = [&](Operand op, const std::array<axis_list, 2>& dims) {
    const auto global = global_extents(op, shape);
    return geo.extent(global[0], dims[0]) * geo.extent(global[1], dims[1]);
  };
  std::int64_t total = elements(Operand::A, state.a) + elements(Operand::B, state.b) + elements(Operand::C, output);
  std::int64_t c_buffers[2] = {0, 0};
  int next_c = 0;
  auto hold_c = [&](std::int64_t n) {
    c_buffers[next_c] = std::max(c_buffers[next_c], n);
    next_c = 1 - next_c;
  };
  std::int64_t ring = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    bool writes_output = true;
    for (std::size_t j = i + 1; j < steps.size(); ++j)
      if (steps[j].kind != StepKind::all_reduce) writes_output = false;
    auto& dims = state.of(step.operand);
    switch (step.kind) {
      case StepKind::all_gather:
      case StepKind::ring_all_gather_gemm: {
        const auto d = static_cast<std::size_t>(step.dim);
        axis_list kept;
        for (std::size_t a = 0; a + step.axes.size() < dims[d].size(); ++a) kept.push_back(dims[d][a]);
        if (step.kind == StepKind::ring_all_gather_gemm) {
          const std::int64_t block = elements(step.operand, dims);
          ring = std::max(ring, 2 * (block + 1));  // two blocks in flight (sizes differ by at most one row)
        }
        dims[d] = kept;
        if (step.kind == StepKind::all_gather && step.operand != Operand::C) total += elements(step.operand, dims);
        if (step.operand == Operand::C && !writes_output) hold_c(elements(Operand::C, dims));
        if (step.kind == StepKind::ring_all_gather_gemm && !writes_output) hold_c(elements(Operand::C, state.c));
        break;
      }
      case StepKind::reduce_scatter:
      case StepKind::ring_gemm_reduce_scatter: {
        if (step.kind == StepKind::ring_gemm_reduce_scatter)
          ring = std::max(ring, 3 * (elements(Operand::C, state.c) / geo.group_size(step.axes) + shape.n + shape.m));
        state.c[static_cast<std::size_t>(step.dim)] = concat(state.c[static_cast<std::size_t>(step.dim)], step.axes);
        if (!writes_output) hold_c(elements(Operand::C, state.c));
        break;
      }
      case StepKind::local_gemm:
        if (!writes_output) hold_c(elements(Operand::C, state.c));
        break;
      case StepKind::summa_gemm:
        ring = std::max(ring, std::int64_t{panel_width} * (geo.extent(shape.m, state.a[0]) + geo.extent(shape.n, state.b[1])));
        if (!writes_output) hold_c(elements(Operand::C, state.c));
        break;
      case StepKind::all_reduce:
        break;
    }
  }
  return total + c_buffers[0] + c_buffers[1] + ring;
}

// ---- describe() ---------------------------------------------------------------------

template <MeshType M>
std::string axes_text_of(const axis_list& axes) {
  static_vector<std::string_view, max_mesh_axes> names;
  for (int a : axes) names.push_back(M::names[static_cast<std::size_t>(a)]);
  return axes_text(names);
}

constexpr std::string_view dim_text(Operand op, int dim) {
  if (op == Operand::A) return dim == 0 ? "m" : "k";
  if (op == Operand::B) return dim == 0 ? "k" : "n";
  return dim == 0 ? "m" : "n";
}

constexpr std::string_view operand_text(Operand op) { return op == Operand::A ? "A" : op == Operand::B ? "B" : "C"; }

template <MeshType M>
std::string describe_step(const Step& s) {
  switch (s.kind) {
    case StepKind::all_gather:
      return cat("AllGather ", operand_text(s.operand), " along ", dim_text(s.operand, s.dim), " over ",
                 axes_text_of<M>(s.axes));
    case StepKind::reduce_scatter:
      return cat("ReduceScatter C along ", dim_text(Operand::C, s.dim), " over ", axes_text_of<M>(s.axes));
    case StepKind::all_reduce:
      return cat("AllReduce C over ", axes_text_of<M>(s.axes));
    case StepKind::local_gemm:
      return "local GEMM";
    case StepKind::ring_all_gather_gemm:
      return cat("ring AllGather ", operand_text(s.operand), " along k over ", axes_text_of<M>(s.axes),
                 " overlapped with the local GEMM");
    case StepKind::ring_gemm_reduce_scatter:
      return cat("local GEMM overlapped with ring ReduceScatter C along ", dim_text(Operand::C, s.dim), " over ",
                 axes_text_of<M>(s.axes));
    case StepKind::summa_gemm:
      return cat("SUMMA: Broadcast A panels along k over ", axes_text_of<M>(s.axes), " and B panels along k over ",
                 axes_text_of<M>(s.axes2), ", GEMM per panel");
  }
  return {};
}

template <MeshType M>
std::string describe_schedule(const Schedule& steps) {
  std::string text;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i) text.append(" -> ");
    text.append(describe_step<M>(steps[i]));
  }
  return text;
}

template <MeshType M>
constexpr Traffic max_over_ranks(const M& mesh, auto&& traffic_of) {
  Traffic worst;
  for (int rank = 0; rank < mesh.size(); ++rank) {
    const Traffic t = traffic_of(mesh.unravel(rank));
    if (t.bytes > worst.bytes || (t.bytes == worst.bytes && t.messages > worst.messages)) worst = t;
  }
  return worst;
}

}  // namespace detail

/// Everything the compiler decides about C = A * B: policy, output sharding,
/// schedule, cost model and description. ShC is NaturalOutput or a requested
/// TensorSharding (e.g. replicated, a ReduceScatter split, or one with Partial).
template <MeshType M, TensorShardingType ShA, TensorShardingType ShB, typename ShC = NaturalOutput,
          detail::MatmulVariant Variant = variant::Standard>
struct matmul_plan {
 private:
  static constexpr bool inputs_valid =
      detail::checked_sharding<M, ShA, 2>::value && detail::checked_sharding<M, ShB, 2>::value;
  static_assert(!ShA::is_partial && !ShB::is_partial,
                "shardwise::matmul: an input is Partial (a pending sum); call reduce() on it first");

 public:
  /// C = [am, bn]: what the policy produces without resharding.
  using natural_output = typename detail::natural_output<ShA, ShB, inputs_valid>::type;
  /// The sharding of the result.
  using output_sharding = std::conditional_t<std::is_same_v<ShC, NaturalOutput>, natural_output, ShC>;
  static_assert(detail::is_tensor_sharding_v<output_sharding>,
                "shardwise::matmul: the requested output must be a TensorSharding<rows, columns> "
                "(or NaturalOutput)");

 private:
  static constexpr detail::plan_data data = [] {
    if constexpr (inputs_valid && detail::checked_sharding<M, output_sharding, 2>::value) {
      return detail::make_plan(detail::resolve_sharding<M, ShA>(), detail::resolve_sharding<M, ShB>(),
                               detail::resolve_sharding<M, output_sharding>(),
                               detail::variant_traits<Variant>::kind);
    } else {
      return detail::plan_data{};
    }
  }();
  static_assert(data.error != detail::PlanError::same_axis_splits_m_and_n,
                "shardwise::matmul: the same mesh axis splits the rows of A (m) and the columns of B (n), "
                "so C[m, n] would need it twice; split m and n over different axes, or replicate one");
  static_assert(data.error != detail::PlanError::output_partial_not_pending,
                "shardwise::matmul: the requested output is Partial over an axis that this product does "
                "not leave pending; only the k axes shared by A and B (ak = bk) can stay Partial");
  static_assert(data.error != detail::PlanError::output_rows_unreachable,
                "shardwise::matmul: the requested output cannot be reached for the rows (m): keep A's row "
                "axes, drop minor ones (AllGather), or add the reduced k axes as minor ones (ReduceScatter)");
  static_assert(data.error != detail::PlanError::output_cols_unreachable,
                "shardwise::matmul: the requested output cannot be reached for the columns (n): keep B's "
                "column axes, drop minor ones (AllGather), or add the reduced k axes as minor ones "
                "(ReduceScatter)");
  static_assert(data.error != detail::PlanError::ring_needs_one_gather_or_scatter,
                "shardwise::matmul: the ring variant overlaps exactly one AllGather of A or B along k, or "
                "the ReduceScatter right after the GEMM; this schedule has neither, so use variant::Standard");
  static_assert(data.error != detail::PlanError::summa_needs_grid_layout,
                "shardwise::matmul: the SUMMA variant needs A = [X, Y] and B = [X, Y] (A's rows and B's k "
                "over the same axes X, A's k and B's columns over the same axes Y); use variant::Standard");

 public:
  /// One of policy::Unsharded, MatchedInner, UnmatchedInner, Outer, Full.
  using policy = typename detail::policy_type<data.policy>::type;
  using variant_type = Variant;
  static constexpr int summa_panel_width = detail::variant_traits<Variant>::panel_width;
  /// The steps the kernel runs, in order.
  static constexpr Schedule schedule = data.steps;

  /// Sharding of A, B and C before the first step (C as the GEMM leaves it: [am, bn]).
  static constexpr detail::operand_state initial_state() {
    return {detail::resolve_sharding<M, ShA>().dims, detail::resolve_sharding<M, ShB>().dims,
            detail::resolve_sharding<M, natural_output>().dims};
  }

  /// Bytes and messages the rank at `coordinate` sends (ring convention, detail/traffic.hpp).
  static constexpr Traffic traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                   MatmulShape shape, std::int64_t scalar_bytes) {
    return detail::schedule_traffic(schedule, initial_state(), mesh, coordinate, shape, scalar_bytes, summa_panel_width);
  }
  /// The largest traffic over all ranks (the bottleneck rank).
  static constexpr Traffic max_traffic(const M& mesh, MatmulShape shape, std::int64_t scalar_bytes) {
    return detail::max_over_ranks(mesh, [&](const auto& c) { return traffic(mesh, c, shape, scalar_bytes); });
  }

  /// Bytes this rank holds during the matmul: its blocks of A, B and C plus the buffers the
  /// schedule names (see detail::schedule_footprint).
  static constexpr std::int64_t footprint_bytes(const M& mesh, const typename M::coordinate_type& coordinate,
                                                MatmulShape shape, std::int64_t scalar_bytes) {
    return scalar_bytes * detail::schedule_footprint(schedule, initial_state(),
                                                     detail::resolve_sharding<M, output_sharding>().dims, mesh,
                                                     coordinate, shape, summa_panel_width);
  }

  /// One line: "Outer: AllGather B along k over x -> local GEMM => C[x, -]".
  static std::string describe() {
    return detail::cat(policy::name, ": ", detail::describe_schedule<M>(schedule), " => C",
                       output_sharding::to_string());
  }
};

/// The policy family the compiler picks for A * B.
template <MeshType M, TensorShardingType ShA, TensorShardingType ShB>
using matmul_policy_t = typename matmul_plan<M, ShA, ShB>::policy;

/// The sharding of C for a requested output (NaturalOutput: [am, bn]).
template <MeshType M, TensorShardingType ShA, TensorShardingType ShB, typename ShC = NaturalOutput>
using matmul_output_t = typename matmul_plan<M, ShA, ShB, ShC>::output_sharding;

/// Finishing or changing a sharding without a GEMM: reduce a Partial, gather minor
/// axes, or ReduceScatter pending axes into a dimension (see reshard_steps).
template <MeshType M, TensorShardingType From, TensorShardingType To>
struct reshard_plan {
 private:
  static constexpr bool valid =
      detail::checked_sharding<M, From, 2>::value && detail::checked_sharding<M, To, 2>::value;
  static constexpr detail::reshard_data data = [] {
    if constexpr (!valid) {
      return detail::reshard_data{};
    } else {
      const auto from = detail::resolve_sharding<M, From>();
      const auto to = detail::resolve_sharding<M, To>();
      return detail::reshard_steps(from.dims, from.partial, to.dims, to.partial);
    }
  }();
  static_assert(data.error != detail::PlanError::output_partial_not_pending,
                "shardwise::reshard: the target is Partial over an axis the source has no pending sum over");
  static_assert(data.error != detail::PlanError::output_rows_unreachable &&
                    data.error != detail::PlanError::output_cols_unreachable,
                "shardwise::reshard: the target sharding cannot be reached: each dimension may keep its axes, "
                "drop minor ones (AllGather), or add pending Partial axes as minor ones (ReduceScatter)");

 public:
  static constexpr Schedule schedule = [] {
    Schedule s;
    for (const Step& step : data.steps) s.push_back(step);
    return s;
  }();

  static constexpr Traffic traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                   std::int64_t rows, std::int64_t cols, std::int64_t scalar_bytes) {
    detail::operand_state state{};
    if constexpr (valid) state.c = detail::resolve_sharding<M, From>().dims;
    return detail::schedule_traffic(schedule, state, mesh, coordinate, MatmulShape{rows, 0, cols},
                                    scalar_bytes, 0);
  }

  static std::string describe() {
    return schedule.empty() ? std::string("no communication")
                            : detail::cat(detail::describe_schedule<M>(schedule), " => ", To::to_string());
  }
};

}  // namespace shardwise
