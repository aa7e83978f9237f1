// shardwise/plan/contraction.hpp: the one planner for C[out] = sum A[ia] * B[ib].
//
// Every index letter of a two-operand contraction is one of
//   batch       in A, B and C     (b in "bmk,bkn->bmn")
//   free        in one input and C (m from A, n from B)
//   contracted  in A and B only   (k)
// and each dimension of each tensor is split over a list of mesh axes (or none). The rules,
// all decided at compile time:
//   contracted, A and B split it over the same axes S   local contraction leaves C Partial
//                                                        over S (reduced, scattered or kept
//                                                        at the end)
//   contracted or batch, one side split over more axes  slice the other side to match (a
//     whose extra axes the other side does not use     local copy, no bytes), then as the
//                                                        same axes; or gather as below: both
//                                                        plans are kept, and the one whose
//                                                        busiest rank sends fewer bytes for
//                                                        the call's extents runs
//   batch, or contracted between inputs of different  AllGather one side along it (the
//     ranks, split over crossed axes (neither split a   lower-rank one, B on a tie), slice it
//     prefix of the other: x and y)                     to the other's split, then as the
//                                                        same axes; or gather both: both
//                                                        plans are kept, as above
//   contracted, split differently                       AllGather each side along it over
//                                                        its axes, then contract locally
//   batch, split the same                               local
//   batch, split differently                            AllGather each side down to the
//                                                        axes both start with
//   free                                                 stays split: C gets it naturally
// and then C goes from that natural sharding to the requested one by reshard.hpp's rule. A
// free dimension whose requested split cannot be reached that way is gathered on its input
// first, down to the axes the two share, when that makes it reachable. One mesh axis
// splitting two dimensions of C is an error that names the two dimensions and the axis.
//
// Variants fuse the local contraction with its neighbour: ring (the one AllGather along a
// contracted dimension, or the ReduceScatter right after, as a ring of messages overlapped
// with the GEMMs) and SUMMA (matrices on a grid: panels broadcast instead of whole operands
// gathered). The matmul policies (matmul_plan.hpp) are this planner on "mk,kn->mn".
// Pure compile-time.
#pragma once

#include <array>
#include <cstddef>

#include "shardwise/layout.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/plan/step.hpp"

namespace shardwise::detail {

enum class VariantKind { standard, ring, summa, summa_25d };

/// The index letters of A, B and C (how plan_names spells them) and the number of each.
struct contraction_indices {
  plan_names names{};
  std::array<int, 3> ranks{};

  [[nodiscard]] constexpr char letter(Operand op, int dim) const {
    return names.dims[index_of(op)][static_cast<std::size_t>(dim)];
  }
  /// The dimension of `op` with index `letter`, or -1.
  [[nodiscard]] constexpr int dim_of(Operand op, char letter) const {
    for (int d = 0; d < ranks[index_of(op)]; ++d)
      if (this->letter(op, d) == letter) return d;
    return -1;
  }
};

/// C[m, n] = A[m, k] * B[k, n].
inline constexpr contraction_indices matmul_indices{matmul_names, {2, 2, 2}};

struct contraction_plan_data {
  operand_axes start{};  ///< A and B as given, C as the local contraction leaves it
  Schedule steps;
  plan_error error;
};

namespace contraction_detail {

/// Puts the local contraction at `at` of `steps` fused with the step `fused` (removed).
constexpr Schedule fuse(const Schedule& steps, std::size_t gemm, std::size_t fused, const Step& replacement) {
  Schedule result;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i == fused) continue;
    result.push_back(i == gemm ? replacement : steps[i]);
  }
  return result;
}

/// How many letters of `op` are free (in C) or contracted (not in C), batch letters aside.
constexpr int letters_of_kind(const contraction_indices& ix, Operand op, bool contracted) {
  const Operand other = op == Operand::A ? Operand::B : Operand::A;
  int n = 0;
  for (int d = 0; d < ix.ranks[index_of(op)]; ++d) {
    const char l = ix.letter(op, d);
    const bool in_c = ix.dim_of(Operand::C, l) >= 0, in_other = ix.dim_of(other, l) >= 0;
    if (contracted ? !in_c : (in_c && !in_other)) ++n;
  }
  return n;
}

/// The ring variant of a standard schedule, or an error when it has nothing to overlap. A
/// ring cuts one dimension into blocks and multiplies a slice of the other operand per block,
/// so the dimension must be the only one of its kind on its side (always so for a matmul).
constexpr plan_error make_ring(Schedule& steps, const contraction_indices& ix) {
  std::size_t gemm = 0, gather = 0;
  int gathers = 0;
  bool contracted_gather = false;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (s.kind == StepKind::all_gather && s.operand != Operand::C) {
      ++gathers;
      gather = i;
      contracted_gather = ix.dim_of(Operand::C, ix.letter(s.operand, s.dim)) < 0;
    }
    if (s.kind == StepKind::local_gemm) gemm = i;
  }
  if (gathers == 1 && contracted_gather && letters_of_kind(ix, Operand::A, true) == 1) {
    const Step& g = steps[gather];
    steps = fuse(steps, gemm, gather, {StepKind::ring_all_gather_gemm, g.operand, g.dim, g.axes, {}});
    return {};
  }
  if (gathers == 0 && gemm + 1 < steps.size() && steps[gemm + 1].kind == StepKind::reduce_scatter) {
    const Step& rs = steps[gemm + 1];
    const char l = ix.letter(Operand::C, rs.dim);
    const Operand side = ix.dim_of(Operand::A, l) >= 0 ? Operand::A : Operand::B;
    if (ix.dim_of(Operand::A, l) >= 0 && ix.dim_of(Operand::B, l) >= 0) return {PlanError::ring_needs_one_gather_or_scatter};
    if (letters_of_kind(ix, side, false) != 1) return {PlanError::ring_needs_one_gather_or_scatter};
    steps = fuse(steps, gemm, gemm + 1, {StepKind::ring_gemm_reduce_scatter, Operand::C, rs.dim, rs.axes, {}});
    return {};
  }
  return {PlanError::ring_needs_one_gather_or_scatter};
}

/// The first mesh axis that splits two dimensions of `c`, as a plan_error naming them.
constexpr plan_error find_axis_conflict(const tensor_axes& c) {
  for (int d = 0; d < c.rank; ++d)
    for (int e = d + 1; e < c.rank; ++e)
      for (int a : c.dim(d))
        if (contains(c.dim(e), a)) return {PlanError::same_axis_splits_two_output_dims, d, e, a};
  return {};
}

/// Whether reshard.hpp's rule reaches `want` from `have` for one dimension, with `pending`
/// axes available to scatter.
constexpr bool reachable(const axis_list& have, const axis_list& want, const axis_list& pending) {
  return is_prefix(want, have) || (is_prefix(have, want) && is_subset(tail(want, have.size()), pending));
}

}  // namespace contraction_detail

/// Plans C = contract(A, B) for the index letters `ix`, A and B sharded as `a` and `b`, and C
/// requested as `c` (pass the natural sharding itself to ask for no resharding).
/// `natural_only`: C was not requested, so no input is gathered to reach it. `layers`: the
/// layer axes of the 2.5D variant (A and B replicated over them; each layer does 1/c of k).
/// `slice_inputs` false: never slice an input, gather the other instead (the plan a slice
/// competes with at run time: einsum_plan.hpp's alternative schedule).
constexpr contraction_plan_data plan_contraction(const contraction_indices& ix, const tensor_axes& a,
                                                 const tensor_axes& b, const tensor_axes& c, bool natural_only,
                                                 VariantKind variant, const axis_list& layers = {},
                                                 bool slice_inputs = true) {
  using namespace contraction_detail;
  contraction_plan_data plan;
  plan.start[Operand::A] = a;
  plan.start[Operand::B] = b;
  tensor_axes natural;
  natural.rank = ix.ranks[2];
  axis_list pending;
  Schedule gathers_a, gathers_b;

  if (variant == VariantKind::summa || variant == VariantKind::summa_25d) {
    // Matrices only: A = [X, Y], B = [X, Y]; A's panels travel over Y, B's over X. 2.5D: on
    // each layer (A and B replicated over the layer axes), its 1/c of k; C pending over them.
    const axis_list &am = a.dim(0), &ak = a.dim(1), &bk = b.dim(0), &bn = b.dim(1);
    if (ix.ranks != std::array<int, 3>{2, 2, 2} || am.empty() || ak.empty() || !(am == bk) || !(ak == bn)) {
      plan.error = {PlanError::summa_needs_grid_layout};
      return plan;
    }
    if (variant == VariantKind::summa_25d &&
        (layers.empty() || intersects(layers, a.used()) || intersects(layers, b.used()))) {
      plan.error = {PlanError::summa_25d_layers_split_inputs};
      return plan;
    }
    natural.dim(0) = am;
    natural.dim(1) = bn;
    if (plan_error conflict = find_axis_conflict(natural); !conflict.ok()) {
      plan.error = conflict;
      return plan;
    }
    if (variant == VariantKind::summa_25d) pending = layers;
    plan.steps.push_back({StepKind::summa_gemm, Operand::C, -1, ak, bk, variant == VariantKind::summa_25d ? layers : axis_list{}});
  } else {
    // A shared letter that one input splits over more axes than the other, the extra ones
    // unused by the other: that other is sliced to match (local, no bytes) rather than the
    // first gathered. `a_now`, `b_now`: the inputs after the slices so far.
    tensor_axes a_now = a, b_now = b;
    Schedule slices;
    // The ring variant is asked for to overlap a gather: slicing would leave it nothing to overlap.
    auto slice_to_match = [&](int da, int db) {
      if (variant == VariantKind::ring || !slice_inputs) return;
      const axis_list &sa = a_now.dim(da), &sb = b_now.dim(db);
      if (is_prefix(sa, sb) && sa.size() < sb.size() && !intersects(tail(sb, sa.size()), a_now.used())) {
        slices.push_back({StepKind::slice, Operand::A, da, tail(sb, sa.size()), {}});
        a_now.dim(da) = sb;
      } else if (is_prefix(sb, sa) && sb.size() < sa.size() && !intersects(tail(sa, sb.size()), b_now.used())) {
        slices.push_back({StepKind::slice, Operand::B, db, tail(sa, sb.size()), {}});
        b_now.dim(db) = sa;
      }
    };
    // A shared letter split over crossed axes (neither split a prefix of the other, as x and
    // y): one input is gathered along it and then sliced to the other's split, so that one
    // operand moves instead of both (a batch letter always; a contracted one see below). The lower-rank input is the one gathered (the vector of a
    // matrix-vector product), B on a tie; the gather-both plan stays as the alternative, and
    // the cheaper runs per call. `keeps(split)`: whether the letter may end up with that split.
    // Its steps join `slices` in the order decided, as each decision reads the state before it.
    auto gather_then_slice = [&](int da, int db, auto keeps) {
      if (variant == VariantKind::ring || !slice_inputs) return;
      const axis_list sa = a_now.dim(da), sb = b_now.dim(db);
      if (sa.empty() || sb.empty() || is_prefix(sa, sb) || is_prefix(sb, sa)) return;
      auto regather = [&](Operand op, tensor_axes& now, int d, const axis_list& from, const axis_list& to) {
        tensor_axes after = now;
        after.dim(d) = {};
        if (!keeps(to) || intersects(to, after.used())) return false;
        slices.push_back({StepKind::all_gather, op, d, from, {}});
        slices.push_back({StepKind::slice, op, d, to, {}});
        now.dim(d) = to;
        return true;
      };
      if (ix.ranks[1] <= ix.ranks[0]) {
        if (!regather(Operand::B, b_now, db, sb, sa)) regather(Operand::A, a_now, da, sa, sb);
      } else if (!regather(Operand::A, a_now, da, sa, sb)) {
        regather(Operand::B, b_now, db, sb, sa);
      }
    };
    // Contracted letters first: what they leave pending decides which outputs are reachable.
    for (int da = 0; da < ix.ranks[0]; ++da) {
      const char l = ix.letter(Operand::A, da);
      const int db = ix.dim_of(Operand::B, l);
      if (db < 0 || ix.dim_of(Operand::C, l) >= 0) continue;
      slice_to_match(da, db);
      // Of two inputs of one rank (matrices), gathering both usually sends less than gathering
      // one and reducing C, and it stays the plan; a vector against a matrix gathers the vector.
      if (ix.ranks[0] != ix.ranks[1]) gather_then_slice(da, db, [](const axis_list&) { return true; });
      const axis_list &sa = a_now.dim(da), &sb = b_now.dim(db);
      if (sa == sb) {
        pending = concat(pending, sa);
      } else {
        if (!sa.empty()) gathers_a.push_back({StepKind::all_gather, Operand::A, da, sa, {}});
        if (!sb.empty()) gathers_b.push_back({StepKind::all_gather, Operand::B, db, sb, {}});
      }
    }
    // Then every dimension of C: batch letters meet at the axes both inputs start with; a free
    // letter keeps its input's split unless the requested one is out of reach from it.
    struct free_dim {
      Operand from = Operand::A;
      int dim = -1;  // in `from`; -1 for a batch letter
    };
    std::array<free_dim, max_tensor_rank> source{};
    auto pre_gather = [&](int dc, const axis_list& down_to) {
      const free_dim f = source[static_cast<std::size_t>(dc)];
      const axis_list& have = (f.from == Operand::A ? a : b).dim(f.dim);
      (f.from == Operand::A ? gathers_a : gathers_b)
          .push_back({StepKind::all_gather, f.from, f.dim, tail(have, down_to.size()), {}});
      natural.dim(dc) = down_to;
    };
    for (int dc = 0; dc < ix.ranks[2]; ++dc) {
      const char l = ix.letter(Operand::C, dc);
      const int da = ix.dim_of(Operand::A, l), db = ix.dim_of(Operand::B, l);
      const axis_list& want = c.dim(dc);
      if (da >= 0 && db >= 0) {
        // Sliced only when C keeps that split: else gathering C afterwards would undo the slice.
        const axis_list& longer = a_now.dim(da).size() > b_now.dim(db).size() ? a_now.dim(da) : b_now.dim(db);
        if (natural_only || is_prefix(longer, want)) slice_to_match(da, db);
        // Crossed: C keeps the split of the input not gathered, so it must lead to the one wanted.
        gather_then_slice(da, db, [&](const axis_list& kept) { return natural_only || is_prefix(kept, want); });
        const axis_list meet = common_prefix(a_now.dim(da), b_now.dim(db));
        if (a_now.dim(da).size() > meet.size())
          gathers_a.push_back({StepKind::all_gather, Operand::A, da, tail(a_now.dim(da), meet.size()), {}});
        if (b_now.dim(db).size() > meet.size())
          gathers_b.push_back({StepKind::all_gather, Operand::B, db, tail(b_now.dim(db), meet.size()), {}});
        natural.dim(dc) = meet;
        continue;
      }
      source[static_cast<std::size_t>(dc)] = {da >= 0 ? Operand::A : Operand::B, da >= 0 ? da : db};
      const axis_list& have = (da >= 0 ? a : b).dim(da >= 0 ? da : db);
      natural.dim(dc) = have;
      if (natural_only || reachable(have, want, pending)) continue;
      if (const axis_list meet = common_prefix(have, want); reachable(meet, want, pending)) pre_gather(dc, meet);
      // else: reshard_steps below names the dimension
    }
    // One axis splitting two dimensions of C: when C was requested without that axis on one
    // of them, gather that input first instead of C afterwards.
    for (plan_error conflict = find_axis_conflict(natural); !conflict.ok(); conflict = find_axis_conflict(natural)) {
      bool resolved = false;
      for (int dc : {conflict.dim, conflict.other_dim}) {
        const axis_list& want = c.dim(dc);
        if (resolved || natural_only || source[static_cast<std::size_t>(dc)].dim < 0 || contains(want, conflict.axis) ||
            !is_prefix(want, natural.dim(dc)))
          continue;
        pre_gather(dc, want);
        resolved = true;
      }
      if (!resolved) {
        plan.error = conflict;
        return plan;
      }
    }
    for (const Step& s : slices) plan.steps.push_back(s);  // first: they shrink what the gathers move
    for (const Step& s : gathers_a) plan.steps.push_back(s);
    for (const Step& s : gathers_b) plan.steps.push_back(s);
    plan.steps.push_back({StepKind::local_gemm, Operand::C, -1, {}, {}});
  }
  natural.partial = pending;
  plan.start[Operand::C] = natural;

  const reshard_result finish = reshard_steps(natural, c);
  if (!finish.error.ok()) {
    plan.error = finish.error;
    return plan;
  }
  for (const Step& s : finish.steps) plan.steps.push_back(s);
  if (variant == VariantKind::ring) plan.error = make_ring(plan.steps, ix);
  return plan;
}

/// The same on kernel layouts: A is first gathered from `a` to `kernel_a` and B from `b` to
/// `kernel_b` (AllGathers of minor axes only), then the contraction runs on the kernel layouts.
/// This is how a plan starts from operands stored once (each element on one rank) and still
/// runs a kernel that replicates them, such as 2.5D (A and B replicated over the layers) or
/// the 3-D algorithm; the sharding planner's plans are of this form.
constexpr contraction_plan_data plan_contraction_via(const contraction_indices& ix, const tensor_axes& a,
                                                     const tensor_axes& b, const tensor_axes& kernel_a,
                                                     const tensor_axes& kernel_b, const tensor_axes& c,
                                                     bool natural_only, VariantKind variant,
                                                     const axis_list& layers = {}, bool slice_inputs = true) {
  contraction_plan_data plan;
  auto gather_to = [&](Operand op, const tensor_axes& from, const tensor_axes& to) {
    if (!from.partial.empty() || !to.partial.empty() || from.rank != to.rank) return false;
    const reshard_result r = reshard_steps(from, to);
    if (!r.error.ok()) return false;
    for (Step s : r.steps) {
      if (s.kind != StepKind::all_gather) return false;
      s.operand = op;
      plan.steps.push_back(s);
    }
    return true;
  };
  if (!gather_to(Operand::A, a, kernel_a) || !gather_to(Operand::B, b, kernel_b)) {
    plan.error = {PlanError::kernel_layout_unreachable};
    return plan;
  }
  const contraction_plan_data inner = plan_contraction(ix, kernel_a, kernel_b, c, natural_only, variant, layers, slice_inputs);
  for (const Step& s : inner.steps) plan.steps.push_back(s);
  plan.start = inner.start;
  plan.start[Operand::A] = a;
  plan.start[Operand::B] = b;
  plan.error = inner.error;
  return plan;
}

}  // namespace shardwise::detail
