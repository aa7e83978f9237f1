// shardwise/plan/matmul_kernels.hpp: the kernels the matmul planner searches and their bounds.
// A kernel is each mesh axis's role in A's and B's kernel layouts, the variant and 2.5D's layer
// axes (matmul_kernel); for_each_kernel enumerates them, bound_kernel bounds every plan on one
// from below in closed form, and plan_bound orders the search. Implementation details of
// plan_matmul (matmul_search.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "shardwise/layout.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

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
  /// Its bytes and messages, in Traffic's order.
  [[nodiscard]] constexpr Traffic traffic() const { return {bytes, messages}; }
};

/// Whether a plan bounded by `bound` could fit `budget` and be cheaper than `best`.
constexpr bool could_beat(const plan_bound& bound, const MatmulChoice& best, std::int64_t budget) {
  if (bound.footprint > budget) return false;
  if (!best.found) return true;
  if (bound.traffic() != best.traffic) return bound.traffic() < best.traffic;
  return bound.footprint < best.footprint_bytes;
}

/// The order of the search: the smaller bound first (bytes, then messages, then footprint).
constexpr bool bound_before(const plan_bound& x, const plan_bound& y) {
  if (x.traffic() != y.traffic()) return x.traffic() < y.traffic();
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

}  // namespace detail

}  // namespace shardwise
