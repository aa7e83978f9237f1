// shardwise/plan/matmul_outputs.hpp: the plans of one standard or ring kernel, one per output
// layout C. for_each_output enumerates them (output_plan), build_schedule writes the schedule
// contraction.hpp's planner would, and output_rank_costs costs it on one rank without writing
// it. Implementation details of plan_matmul (matmul_search.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "shardwise/detail/partition.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/plan/matmul_kernels.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

namespace detail {

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

}  // namespace detail

}  // namespace shardwise
