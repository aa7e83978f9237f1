// shardwise/plan/policy.hpp: the policy families and the variants of a contraction.
//
// Every two-operand contraction C = contract(A, B) (a matmul, an einsum) falls in exactly one
// family, named after the matmul case it generalizes. Write am for the axes splitting A's
// free indices (in A and C only), bn for B's, and ak, bk for the axes splitting the
// contracted indices (in A and B only) in A and in B; batch indices (in all three of an
// einsum such as "bmk,bkn->bmn") do not count, but for one family of their own:
//   Unsharded       nothing is split
//   Batched         only batch indices are split (each rank contracts its own batch block)
//   MatchedInner    ak = bk (each contracted index split the same), am = bn = none
//   UnmatchedInner  ak != bk, am = bn = none
//   Outer           exactly one of am, bn split
//   Full            both am and bn split
// A matmul has no batch index, so it is always one of the five others.
// A variant says how a schedule runs: standard, ring (the one gather or scatter overlapped
// with the GEMMs) or SUMMA (panels broadcast on a grid). Pure compile-time.
#pragma once

#include <string_view>

#include "shardwise/layout.hpp"
#include "shardwise/plan/contraction.hpp"

namespace shardwise {

/// The policy families (see the top of this file).
namespace policy {
/// am = ak = bk = bn = none: every rank multiplies whole operands.
struct Unsharded { static constexpr std::string_view name = "Unsharded"; /**< As describe() prints it. */ };
/// Only batch indices are split (an einsum's "b" in "bmk,bkn->bmn"): a local batched GEMM on
/// each rank's batch block, after gathers where A and B split a batch index differently.
struct Batched { static constexpr std::string_view name = "Batched"; /**< As describe() prints it. */ };
/// ak = bk (not none), am = bn = none: local GEMM gives a partial C, then AllReduce over ak.
struct MatchedInner { static constexpr std::string_view name = "MatchedInner"; /**< As describe() prints it. */ };
/// ak != bk, am = bn = none: AllGather A and B along k, then a local GEMM.
struct UnmatchedInner { static constexpr std::string_view name = "UnmatchedInner"; /**< As describe() prints it. */ };
/// Exactly one of am, bn split: C keeps that split.
struct Outer { static constexpr std::string_view name = "Outer"; /**< As describe() prints it. */ };
/// Both am and bn split: C = [am, bn].
struct Full { static constexpr std::string_view name = "Full"; /**< As describe() prints it. */ };
}  // namespace policy

/// How a schedule is executed. The bytes moved are the same for standard and ring.
namespace variant {
/// Collectives, then the GEMM (or the GEMM, then collectives).
struct Standard { static constexpr std::string_view name = "standard"; /**< For output and messages. */ };
/// The one AllGather along k (or the one ReduceScatter) runs as a ring of nonblocking
/// messages, each block multiplied while the next is in flight.
struct Ring { static constexpr std::string_view name = "ring"; /**< For output and messages. */ };
/// SUMMA for A = [X, Y], B = [X, Y]: panels of at most PanelWidth columns of A are
/// broadcast over Y and rows of B over X, one GEMM per panel; no operand is gathered whole.
template <int PanelWidth = 256>
struct Summa {
  static_assert(PanelWidth >= 1, "shardwise::variant::Summa: the panel width must be at least 1");
  static constexpr std::string_view name = "summa";  ///< For output and messages.
  static constexpr int panel_width = PanelWidth;     ///< Most columns of A (rows of B) in one panel.
};
/// 2.5D matmul (Solomonik and Demmel, 2011) on the layer axes Layers: A = [X, Y] and B = [X, Y]
/// as for SUMMA, replicated over the layers (the types say so: no layer axis splits them). The
/// c = |Layers| layers each take a contiguous 1/c of k (SUMMA panels of at most PanelWidth on
/// their X x Y grid), which leaves C pending over the layers: reduced by an AllReduce, or a
/// ReduceScatter when C is requested split over them, or kept Partial. Bandwidth per rank
/// falls as 1/sqrt(c) against 2-D SUMMA on the same ranks, for c times the memory.
template <int PanelWidth, fixed_string... Layers>
struct Summa25DPanels {
  static_assert(PanelWidth >= 1, "shardwise::variant::Summa25DPanels: the panel width must be at least 1");
  static_assert(sizeof...(Layers) > 0, "shardwise::variant::Summa25D: name the layer axes, e.g. sw::summa_25d<\"z\">");
  static constexpr std::string_view name = "summa_25d";  ///< For output and messages.
  static constexpr int panel_width = PanelWidth;         ///< Most columns of A (rows of B) in one panel.
};
/// 2.5D with panels of 256.
template <fixed_string... Layers>
using Summa25D = Summa25DPanels<256, Layers...>;
/// Gathers first, then Inner: A is AllGathered to the sharding KernelA and B to KernelB (minor
/// axes only, as a reshard may), and the product runs on those. So operands stored once (each
/// element on one rank) can use a kernel that replicates them: 2.5D from [X, (Y, Z)], or the
/// 3-D algorithm. The sharding planner (plan/sharding_planner.hpp) answers in this form.
template <typename KernelA, typename KernelB, typename Inner = Standard>
struct Via {
  static constexpr std::string_view name = Inner::name;  ///< The inner variant's name.
};
}  // namespace variant

/// The standard variant, as a call argument: matmul(a, b, sw::standard).
inline constexpr variant::Standard standard{};
/// The ring variant, as a call argument: matmul(a, b, sw::ring).
inline constexpr variant::Ring ring{};
/// SUMMA with panels of 256, as a call argument: matmul(a, b, sw::summa).
inline constexpr variant::Summa<> summa{};
/// 2.5D over the layer axes, as a call argument: matmul(a, b, sw::summa_25d<"z">).
template <fixed_string... Layers>
inline constexpr variant::Summa25D<Layers...> summa_25d{};
/// Gather to kernel layouts first, as a call argument: matmul(a, b, sw::via<KA, KB, variant::Summa<>>).
template <typename KernelA, typename KernelB, typename Inner = variant::Standard>
inline constexpr variant::Via<KernelA, KernelB, Inner> via{};

/// Ask for the output a plan produces without extra communication (matmul: C = [am, bn]).
struct NaturalOutput {};

namespace detail {

enum class PolicyKind { unsharded, batched, matched_inner, unmatched_inner, outer, full };

/// The family of contract(A, B) for the index letters `ix` and the shardings `a`, `b`.
constexpr PolicyKind classify(const contraction_indices& ix, const tensor_axes& a, const tensor_axes& b) {
  bool am = false, bn = false, k_split = false, k_matched = true, batch_split = false;
  for (int da = 0; da < ix.ranks[0]; ++da) {
    const char l = ix.letter(Operand::A, da);
    const int db = ix.dim_of(Operand::B, l);
    const bool in_c = ix.dim_of(Operand::C, l) >= 0;
    if (in_c && db < 0) am = am || !a.dim(da).empty();
    if (in_c && db >= 0) batch_split = batch_split || !a.dim(da).empty() || !b.dim(db).empty();
    if (in_c || db < 0) continue;
    k_split = k_split || !a.dim(da).empty() || !b.dim(db).empty();
    k_matched = k_matched && a.dim(da) == b.dim(db);
  }
  for (int db = 0; db < ix.ranks[1]; ++db) {
    const char l = ix.letter(Operand::B, db);
    if (ix.dim_of(Operand::C, l) >= 0 && ix.dim_of(Operand::A, l) < 0) bn = bn || !b.dim(db).empty();
  }
  if (!am && !bn) {
    if (!k_split) return batch_split ? PolicyKind::batched : PolicyKind::unsharded;
    return k_matched ? PolicyKind::matched_inner : PolicyKind::unmatched_inner;
  }
  return (am && bn) ? PolicyKind::full : PolicyKind::outer;
}

template <PolicyKind K> struct policy_type;
template <> struct policy_type<PolicyKind::unsharded> { using type = policy::Unsharded; };
template <> struct policy_type<PolicyKind::batched> { using type = policy::Batched; };
template <> struct policy_type<PolicyKind::matched_inner> { using type = policy::MatchedInner; };
template <> struct policy_type<PolicyKind::unmatched_inner> { using type = policy::UnmatchedInner; };
template <> struct policy_type<PolicyKind::outer> { using type = policy::Outer; };
template <> struct policy_type<PolicyKind::full> { using type = policy::Full; };

/// What the planner needs of a variant: its kind, SUMMA's panel width, 2.5D's layer axes (by
/// name) and, for Via, the kernel layouts (`has_kernel`).
struct plain_variant_traits {
  static constexpr int panel_width = 0;
  static constexpr name_list layer_names{};
  static constexpr bool has_kernel = false;
  using kernel_a = void;
  using kernel_b = void;
};
template <typename V> struct variant_traits;
template <> struct variant_traits<variant::Standard> : plain_variant_traits {
  static constexpr VariantKind kind = VariantKind::standard;
};
template <> struct variant_traits<variant::Ring> : plain_variant_traits {
  static constexpr VariantKind kind = VariantKind::ring;
};
template <int W> struct variant_traits<variant::Summa<W>> : plain_variant_traits {
  static constexpr VariantKind kind = VariantKind::summa;
  static constexpr int panel_width = W;
};
template <int W, fixed_string... Layers> struct variant_traits<variant::Summa25DPanels<W, Layers...>> : plain_variant_traits {
  static constexpr VariantKind kind = VariantKind::summa_25d;
  static constexpr int panel_width = W;
  static constexpr name_list layer_names{Layers.view()...};
};
template <typename KA, typename KB, typename Inner>
  requires requires { variant_traits<Inner>::kind; }
struct variant_traits<variant::Via<KA, KB, Inner>> : variant_traits<Inner> {
  static constexpr bool has_kernel = true;
  using kernel_a = KA;
  using kernel_b = KB;
};

/// Satisfied by the variant types (variant::Standard, Ring, Summa<W>).
template <typename V>
concept ContractionVariant = requires { variant_traits<V>::kind; };
/// The same, by the name matmul's signatures use.
template <typename V>
concept MatmulVariant = ContractionVariant<V>;

}  // namespace detail
}  // namespace shardwise
