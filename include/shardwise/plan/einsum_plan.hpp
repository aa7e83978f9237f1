// shardwise/plan/einsum_plan.hpp: what an einsum communicates, decided at compile time.
//
//   using Plan = sw::einsum_plan<"bsm,mh->bsh", Grid, ShX, ShW>;
//   Plan::policy           // its family: Unsharded, Batched, MatchedInner, UnmatchedInner, Outer, Full
//   Plan::output_sharding  // C's sharding: the natural one, or the one requested
//   Plan::describe()       // "Outer: AllGather B along m over x -> local GEMM => C[-, -, x]"
//   Plan::max_traffic(mesh, {{'b', 8}, {'s', 512}, {'m', 1024}, {'h', 4096}}, sizeof(float))
//
// The spec names every index (plan/einsum_spec.hpp); the shardings of A and B split them over
// mesh axes; the one contraction planner (plan/contraction.hpp) writes the schedule. C's
// natural sharding: each free index keeps its input's split, a batch index the axes both
// inputs start with, and a contracted index split the same in A and B leaves a pending sum
// over those axes, reduced (AllReduce) unless C is requested Partial or split over them
// (ReduceScatter). An input split over fewer axes than the other where both carry a
// contracted (or batch) index is sliced to match, at no cost, or the other gathered: the plan
// keeps both schedules, and each call runs the one whose busiest rank sends fewer bytes for
// its extents (uses_alternative; ties go to the gather). A slice of a contracted index leaves
// a sum to reduce: for square matrices that AllReduce of C sends twice the gather's bytes;
// for a matrix times a vector it is far smaller. Where the two inputs split a batch index over
// crossed axes (A over x, B over y), or a contracted one between inputs of different ranks (a
// matrix and a vector), one is gathered along it and sliced to the other's split instead of both
// being gathered; the gather of both stays as the alternative.
// C may have no index ("i,i->"): a 0-D result, replicated once its sum is reduced.
// matmul_plan is this plan for "mk,kn->mn" with matmul's own messages.
//
// Every mistake is one static_assert whose message says what is wrong and how to fix it; the
// index letter or mesh axis concerned is shown beside it (a note in the template argument of
// the failing check). Pure compile-time: no MPI, no Eigen.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "shardwise/detail/diagnostic_note.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/describe.hpp"
#include "shardwise/plan/einsum_spec.hpp"
#include "shardwise/plan/policy.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {
namespace detail {

/// The sharding of C that a contraction produces without resharding (see the top of this
/// file), without its pending sum; `conflict` when one axis would split two of its indices.
struct natural_output_axes {
  tensor_axes axes{};
  plan_error conflict{};
};
constexpr natural_output_axes natural_output_of(const contraction_indices& ix, const tensor_axes& a,
                                                const tensor_axes& b) {
  tensor_axes replicated;
  replicated.rank = ix.ranks[2];
  const contraction_plan_data plan = plan_contraction(ix, a, b, replicated, true, VariantKind::standard);
  if (plan.error.code == PlanError::same_axis_splits_two_output_dims) return {replicated, plan.error};
  tensor_axes natural = plan.start[Operand::C];
  natural.partial = {};
  return {natural, {}};
}

/// A sharding type resolved against the mesh, or replicated where it is not a valid one of
/// `Rank` dimensions (its own checks report that).
template <MeshType M, typename Sh, int Rank>
constexpr tensor_axes resolved_or_replicated() {
  if constexpr (TensorShardingType<Sh>) {
    if constexpr (Sh::rank == static_cast<std::size_t>(Rank)) {
      if constexpr (sharding_error<M, Sh, Sh::rank>() == ShardingError::none)
        return tensor_axes::of(resolve_sharding<M, Sh>());
    }
  }
  tensor_axes replicated;
  replicated.rank = Rank;
  return replicated;
}

template <MeshType M, typename Sh, int Rank>
constexpr bool valid_sharding_of_rank() {
  if constexpr (TensorShardingType<Sh>) {
    if constexpr (Sh::rank == static_cast<std::size_t>(Rank)) return sharding_error<M, Sh, Sh::rank>() == ShardingError::none;
  }
  return false;
}

template <bool Valid, MeshType M, const tensor_axes& Natural, int Rank>
struct natural_sharding_type {
  using type = replicated_sharding_t<static_cast<std::size_t>(Rank)>;
};
template <MeshType M, const tensor_axes& Natural, int Rank>
struct natural_sharding_type<true, M, Natural, Rank> {
  using type = sharding_of_t<M, Natural>;
};

/// Everything a contraction plan computes from types, or why it cannot be made; never a hard
/// error, so that generic code can ask (valid_einsum, valid_matmul) without failing a compile.
template <MeshType M, const contraction_indices& Ix, typename ShA, typename ShB, typename ShC, typename Variant>
struct contraction_analysis {
  static constexpr bool natural_requested = std::is_same_v<ShC, NaturalOutput>;
  static constexpr bool a_valid = valid_sharding_of_rank<M, ShA, Ix.ranks[0]>();
  static constexpr bool b_valid = valid_sharding_of_rank<M, ShB, Ix.ranks[1]>();
  static constexpr bool c_valid = natural_requested || valid_sharding_of_rank<M, ShC, Ix.ranks[2]>();
  static constexpr bool variant_valid = ContractionVariant<Variant>;
  using traits = std::conditional_t<variant_valid, variant_traits<Variant>, plain_variant_traits>;
  /// 2.5D's layer axes, resolved (empty for other variants); whether the mesh has them all.
  static constexpr bool layers_known = all_names_in_mesh<M>(traits::layer_names);
  static constexpr axis_list layers = layers_known ? resolve_names<M>(traits::layer_names) : axis_list{};
  /// Via's kernel layouts: what A and B are gathered to before the product (themselves without Via).
  static constexpr bool kernels_valid = [] {
    if constexpr (traits::has_kernel)
      return valid_sharding_of_rank<M, typename traits::kernel_a, Ix.ranks[0]>() &&
             valid_sharding_of_rank<M, typename traits::kernel_b, Ix.ranks[1]>();
    else
      return true;
  }();
  static constexpr bool shardings_valid = a_valid && b_valid && c_valid && kernels_valid;

  static constexpr tensor_axes a = resolved_or_replicated<M, ShA, Ix.ranks[0]>();
  static constexpr tensor_axes b = resolved_or_replicated<M, ShB, Ix.ranks[1]>();
  static constexpr bool inputs_partial = !a.partial.empty() || !b.partial.empty();
  /// The layouts the product itself runs on (A and B unless Via gathers them first).
  static constexpr tensor_axes kernel_a = [] {
    if constexpr (traits::has_kernel) return resolved_or_replicated<M, typename traits::kernel_a, Ix.ranks[0]>();
    else return a;
  }();
  static constexpr tensor_axes kernel_b = [] {
    if constexpr (traits::has_kernel) return resolved_or_replicated<M, typename traits::kernel_b, Ix.ranks[1]>();
    else return b;
  }();

  static constexpr natural_output_axes natural_result = [] {
    if constexpr (variant_valid) {
      if (traits::kind == VariantKind::summa_25d) {  // C = [X, Y], the layers' sums reduced
        tensor_axes replicated;
        replicated.rank = Ix.ranks[2];
        const contraction_plan_data p = plan_contraction(Ix, kernel_a, kernel_b, replicated, true, traits::kind, layers);
        if (p.error.ok() || p.error.code == PlanError::same_axis_splits_two_output_dims) {
          tensor_axes natural = p.start[Operand::C];
          natural.partial = {};
          return p.error.ok() ? natural_output_axes{natural, {}} : natural_output_axes{replicated, p.error};
        }
      }
    }
    return natural_output_of(Ix, kernel_a, kernel_b);
  }();
  static constexpr tensor_axes natural_axes = natural_result.axes;
  using natural = typename natural_sharding_type<shardings_valid && natural_result.conflict.ok(), M, natural_axes,
                                                 Ix.ranks[2]>::type;
  using output = std::conditional_t<natural_requested, natural, ShC>;
  static constexpr tensor_axes c = natural_requested ? natural_axes : resolved_or_replicated<M, ShC, Ix.ranks[2]>();

  static constexpr contraction_plan_data data = [] {
    if constexpr (shardings_valid && variant_valid) {
      if (!inputs_partial && layers_known) {
        if (traits::has_kernel)
          return plan_contraction_via(Ix, a, b, kernel_a, kernel_b, c, natural_requested, traits::kind, layers);
        return plan_contraction(Ix, a, b, c, natural_requested, traits::kind, layers);
      }
    }
    return contraction_plan_data{};
  }();
  /// The same product to the same output without slicing an input (the other gathered
  /// instead, as before slices existed): the alternative of a plan that slices, chosen per
  /// call from the extents (einsum_plan::uses_alternative).
  static constexpr bool slices_an_input = [] {
    for (const Step& s : data.steps)
      if (s.kind == StepKind::slice && s.operand != Operand::C) return true;
    return false;
  }();
  static constexpr contraction_plan_data gather_data = [] {
    if constexpr (shardings_valid && variant_valid) {
      if (!inputs_partial && layers_known && data.error.ok() && slices_an_input) {
        if (traits::has_kernel)
          return plan_contraction_via(Ix, a, b, kernel_a, kernel_b, c, false, traits::kind, layers, false);
        return plan_contraction(Ix, a, b, c, false, traits::kind, layers, false);
      }
    }
    return contraction_plan_data{};
  }();
  /// Whether slicing changed the plan, so that two schedules compete at run time.
  static constexpr bool has_alternative = slices_an_input && data.error.ok() && gather_data.error.ok() &&
                                          !(gather_data.steps == data.steps);
  static constexpr int panel_width = traits::panel_width;
  /// The plan's error; with the natural output, one axis on two output indices is the cause,
  /// whatever the variant reports.
  static constexpr plan_error error = natural_requested && !natural_result.conflict.ok() ? natural_result.conflict
                                                                                            : data.error;
  static constexpr bool ok = shardings_valid && variant_valid && layers_known && !inputs_partial && error.ok();
};

/// Bytes of the copies a program makes to change storage orders: for each operand the largest
/// pack, plus the largest landing of a collective that is put in another order afterwards.
constexpr std::int64_t pack_elements(const program& p, const operand_extents& global, const block_geometry& geo) {
  std::array<dim_order, 3> current = p.initial_order;
  operand_axes state = p.start;
  std::array<std::int64_t, 3> largest{};
  std::int64_t landing = 0;
  auto count = [&](Operand op, const operand_axes& s) {
    return element_count(local_extents(s[op], global[index_of(op)], geo), s[op].rank);
  };
  auto note_pack = [&](Operand op, const dim_order& wanted) {
    if (!(current[index_of(op)] == wanted))
      largest[index_of(op)] = std::max(largest[index_of(op)], count(op, state));
  };
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    const lowered_step& l = p.lowered[i];
    operand_axes after = state;
    apply_step(s, after);
    switch (s.kind) {
      case StepKind::all_gather:
      case StepKind::reduce_scatter:
        note_pack(s.operand, l.operand_order);
        if (!(l.result_order == l.operand_order)) landing = std::max(landing, count(s.operand, after));
        current[index_of(s.operand)] = l.result_order;
        break;
      case StepKind::all_reduce:
        current[index_of(Operand::C)] = l.result_order;
        break;
      case StepKind::slice:  // a strided copy in any order: no pack
        current[index_of(s.operand)] = l.result_order;
        break;
      default:
        note_pack(Operand::A, l.operand_order);
        note_pack(Operand::B, l.b_order);
        current[index_of(Operand::A)] = l.operand_order;
        current[index_of(Operand::B)] = l.b_order;
        current[index_of(Operand::C)] = l.result_order;
        break;
    }
    state = after;
  }
  return largest[0] + largest[1] + largest[2] + landing;
}

/// Every way an einsum can fail to plan, with its message: the static_asserts of einsum_plan
/// and einsum_error_v both read this one list. Where a letter or an axis is concerned, the
/// plan shows it beside the message.
#define SHARDWISE_EINSUM_ERRORS(X)                                                                                   \
  X(malformed, "shardwise::einsum: the spec must read \"<A's indices>,<B's indices>-><C's indices>\", one letter "   \
               "(a-z, A-Z) per index, e.g. \"bsm,mh->bsh\"")                                                         \
  X(too_many_indices, "shardwise::einsum: an operand has more than 6 indices (shardwise::max_tensor_rank)")          \
  X(repeated_index,                                                                                                  \
    "shardwise::einsum: an index letter appears twice in one operand (named beside this message); a diagonal or "    \
    "trace is not a contraction: take it from the operand first, or give the two dimensions different letters")      \
  X(output_index_not_in_inputs,                                                                                      \
    "shardwise::einsum: an index of the output appears in neither input (named beside this message); every output "  \
    "index comes from A or B: check the spelling")                                                                   \
  X(index_summed_within_operand,                                                                                     \
    "shardwise::einsum: an index of one input appears neither in the other input nor in the output (named beside "   \
    "this message), so it would be summed within one operand; sum it out of that operand first, or keep it in the " \
    "output")                                                                                                        \
  X(a_rank, "shardwise::einsum: A's sharding has another number of dimensions than the spec gives A indices "        \
            "(both are named beside this message); give TensorSharding one Replicated or Split per index")           \
  X(b_rank, "shardwise::einsum: B's sharding has another number of dimensions than the spec gives B indices "        \
            "(both are named beside this message); give TensorSharding one Replicated or Split per index")           \
  X(c_rank, "shardwise::einsum: the requested output sharding has another number of dimensions than the spec's "     \
            "output indices (both are named beside this message)")                                                   \
  X(invalid_variant, "shardwise::einsum: the third argument must be a variant: sw::standard, sw::ring or sw::summa")  \
  X(input_partial, "shardwise::einsum: an input is Partial (a pending sum); call reduce() on it first")              \
  X(same_axis_splits_two_output_indices,                                                                             \
    "shardwise::einsum: one mesh axis would split two indices of the output (the indices and the axis are named "    \
    "beside this message); replicate one of them in its input, or request an output sharding that leaves the axis " \
    "on one index only (einsum<Spec, TensorSharding<...>>), which gathers the other first")                        \
  X(output_partial_not_pending,                                                                                      \
    "shardwise::einsum: the requested output is Partial over an axis that this contraction does not leave pending; " \
    "only axes that split a contracted index the same way in A and B can stay Partial")                              \
  X(output_index_unreachable,                                                                                        \
    "shardwise::einsum: the requested output sharding cannot be reached for one index (named beside this message): " \
    "keep the axes it has from its input, drop minor ones (AllGather), or add pending contracted axes as minor "     \
    "ones (ReduceScatter)")                                                                                          \
  X(ring_needs_one_gather_or_scatter,                                                                                \
    "shardwise::einsum: the ring variant overlaps exactly one AllGather of a contracted index (with one contracted " \
    "index), or the ReduceScatter right after the GEMM; this schedule has neither, so use sw::standard")            \
  X(summa_needs_grid_layout,                                                                                         \
    "shardwise::einsum: the SUMMA variant is for matrices on a grid (\"mk,kn->mn\" with A = [X, Y], B = [X, Y]); "   \
    "use sw::standard")                                                                                              \
  X(summa_25d_layers_split_inputs,                                                                                   \
    "shardwise::einsum: the 2.5D variant's layer axes must replicate A and B (A and B are copied on every layer); "  \
    "split A and B over the other axes only, or reach such layouts first with sw::via<KernelA, KernelB, ...>")       \
  X(kernel_layout_unreachable,                                                                                       \
    "shardwise::einsum: via<KernelA, KernelB>: each kernel layout must be its operand's sharding with minor axes "   \
    "gathered (dropped from the end of a dimension's axis list)")                                                    \
  X(unknown_layer_axis, "shardwise::einsum: the 2.5D variant names a layer axis the mesh does not have")

enum class EinsumError {
  none,
  invalid_sharding,  // reported by checked_sharding's own messages (an unknown axis name)
#define SHARDWISE_EINSUM_ERROR_ENUM(name, text) name,
  SHARDWISE_EINSUM_ERRORS(SHARDWISE_EINSUM_ERROR_ENUM)
#undef SHARDWISE_EINSUM_ERROR_ENUM
};

constexpr std::string_view einsum_error_text(EinsumError e) {
  switch (e) {
    case EinsumError::none: return {};
    case EinsumError::invalid_sharding:
      return "shardwise::einsum: a sharding names an axis the mesh does not have (see shardwise's message on it)";
#define SHARDWISE_EINSUM_ERROR_CASE(name, text) \
  case EinsumError::name:                       \
    return text;
      SHARDWISE_EINSUM_ERRORS(SHARDWISE_EINSUM_ERROR_CASE)
#undef SHARDWISE_EINSUM_ERROR_CASE
  }
  return {};
}

constexpr EinsumError einsum_error_of(EinsumSpecError e) {
  switch (e) {
    case EinsumSpecError::none: return EinsumError::none;
    case EinsumSpecError::malformed: return EinsumError::malformed;
    case EinsumSpecError::too_many_indices: return EinsumError::too_many_indices;
    case EinsumSpecError::repeated_index: return EinsumError::repeated_index;
    case EinsumSpecError::output_index_not_in_inputs: return EinsumError::output_index_not_in_inputs;
    case EinsumSpecError::index_summed_within_operand: return EinsumError::index_summed_within_operand;
  }
  return EinsumError::none;
}

constexpr EinsumError einsum_error_of(const plan_error& e) {
  switch (e.code) {
    case PlanError::none: return EinsumError::none;
    case PlanError::same_axis_splits_two_output_dims: return EinsumError::same_axis_splits_two_output_indices;
    case PlanError::output_partial_not_pending: return EinsumError::output_partial_not_pending;
    case PlanError::output_dim_unreachable: return EinsumError::output_index_unreachable;
    case PlanError::ring_needs_one_gather_or_scatter: return EinsumError::ring_needs_one_gather_or_scatter;
    case PlanError::summa_needs_grid_layout: return EinsumError::summa_needs_grid_layout;
    case PlanError::summa_25d_layers_split_inputs: return EinsumError::summa_25d_layers_split_inputs;
    case PlanError::kernel_layout_unreachable: return EinsumError::kernel_layout_unreachable;
  }
  return EinsumError::none;
}

/// "A: 3 indices, 2 dimensions": the note beside a rank mismatch.
constexpr diagnostic_note rank_note(char operand, int indices, std::size_t dims) {
  return diagnostic_note().add(operand).add(": ").add_number(indices).add(" indices, ").add_number(static_cast<long long>(dims)).add(" dims");
}

/// The note beside a plan error: the index letters and the axis name concerned.
template <MeshType M>
constexpr diagnostic_note plan_error_note(const plan_error& e, const contraction_indices& ix) {
  diagnostic_note note;
  if (e.code == PlanError::same_axis_splits_two_output_dims) {
    note.add("indices ").add(ix.letter(Operand::C, e.dim)).add(" and ").add(ix.letter(Operand::C, e.other_dim));
    note.add(": axis \"").add(M::names[static_cast<std::size_t>(e.axis)]).add("\"");
  } else if (e.code == PlanError::output_dim_unreachable && e.dim >= 0) {
    note.add("output index ").add(ix.letter(Operand::C, e.dim));
  }
  return note;
}

/// The checks of one einsum, in the order a user should read them: the spec, then the ranks,
/// then the axis names, then the plan. Each reports only when everything before it is right.
template <fixed_string Spec, MeshType M, typename ShA, typename ShB, typename ShC, typename Variant>
struct einsum_checks {
  static constexpr einsum_spec spec = parse_einsum_spec(Spec.view());
  static constexpr bool spec_ok = spec.error == EinsumSpecError::none;
  // A spec with an error is reported alone: the plan then works on a placeholder (a matmul's
  // letters), so that nothing else fails to compile.
  static constexpr contraction_indices indices = spec_ok ? spec.indices : matmul_indices;

  static constexpr std::size_t rank_of(auto* sharding) {
    using Sh = std::remove_pointer_t<decltype(sharding)>;
    if constexpr (TensorShardingType<Sh>) return Sh::rank;
    else return 0;
  }
  static constexpr bool a_is_sharding = TensorShardingType<ShA>, b_is_sharding = TensorShardingType<ShB>;
  static constexpr bool c_is_sharding = std::is_same_v<ShC, NaturalOutput> || TensorShardingType<ShC>;
  static constexpr bool a_rank_ok = rank_of(static_cast<ShA*>(nullptr)) == static_cast<std::size_t>(indices.ranks[0]);
  static constexpr bool b_rank_ok = rank_of(static_cast<ShB*>(nullptr)) == static_cast<std::size_t>(indices.ranks[1]);
  static constexpr bool c_rank_ok = std::is_same_v<ShC, NaturalOutput> ||
                                    rank_of(static_cast<ShC*>(nullptr)) == static_cast<std::size_t>(indices.ranks[2]);
  static constexpr bool shapes_ok = spec_ok && a_is_sharding && b_is_sharding && c_is_sharding && a_rank_ok &&
                                    b_rank_ok && c_rank_ok;

  using analysis = contraction_analysis<M, indices, ShA, ShB, ShC, Variant>;

  static constexpr EinsumError error = [] {
    if (!spec_ok) return einsum_error_of(spec.error);
    if (!a_is_sharding || !a_rank_ok) return EinsumError::a_rank;
    if (!b_is_sharding || !b_rank_ok) return EinsumError::b_rank;
    if (!c_is_sharding || !c_rank_ok) return EinsumError::c_rank;
    if constexpr (shapes_ok) {
      if (!analysis::shardings_valid) return EinsumError::invalid_sharding;
      if (!analysis::variant_valid) return EinsumError::invalid_variant;
      if (!analysis::layers_known) return EinsumError::unknown_layer_axis;
      if (analysis::inputs_partial) return EinsumError::input_partial;
      return einsum_error_of(analysis::error);
    }
    return EinsumError::none;
  }();

  static constexpr diagnostic_note note = [] {
    if (!spec_ok) return spec.note;
    if (!a_rank_ok) return rank_note('A', indices.ranks[0], rank_of(static_cast<ShA*>(nullptr)));
    if (!b_rank_ok) return rank_note('B', indices.ranks[1], rank_of(static_cast<ShB*>(nullptr)));
    if (!c_rank_ok) return rank_note('C', indices.ranks[2], rank_of(static_cast<ShC*>(nullptr)));
    if constexpr (shapes_ok) return plan_error_note<M>(analysis::error, indices);
    return diagnostic_note{};
  }();
};

/// The static_assert of the error at hand, with its note beside the message (`Note`: an
/// exact_note, so that both compilers print its text).
template <EinsumError E, auto Note>
struct einsum_report {
#define SHARDWISE_EINSUM_ERROR_REPORT(name, text) static_assert(E != EinsumError::name || named_beside<Note>, text);
  SHARDWISE_EINSUM_ERRORS(SHARDWISE_EINSUM_ERROR_REPORT)
#undef SHARDWISE_EINSUM_ERROR_REPORT
};

/// Completing checked_sharding reports an unknown axis name with its own message (only when the
/// ranks are right, so that a rank mismatch is reported alone).
template <bool Check, MeshType M, typename Sh>
struct checked_einsum_names {};
template <MeshType M, typename Sh>
struct checked_einsum_names<true, M, Sh> {
  static_assert(sizeof(checked_sharding<M, Sh, Sh::rank>) > 0);
};

}  // namespace detail

/// Whether sw::einsum<Spec>(a, b) with these shardings (requested output, variant) has a plan:
/// a question generic code can ask without failing a compile.
template <fixed_string Spec, MeshType M, typename ShA, typename ShB, typename ShC = NaturalOutput,
          typename Variant = variant::Standard>
inline constexpr bool valid_einsum = detail::einsum_checks<Spec, M, ShA, ShB, ShC, Variant>::error ==
                                     detail::EinsumError::none;

/// Why it has none: the text einsum's static_assert would print (empty when valid_einsum).
template <fixed_string Spec, MeshType M, typename ShA, typename ShB, typename ShC = NaturalOutput,
          typename Variant = variant::Standard>
inline constexpr std::string_view einsum_error_v =
    detail::einsum_error_text(detail::einsum_checks<Spec, M, ShA, ShB, ShC, Variant>::error);

/// Everything the compiler decides about C = einsum<Spec>(A, B): the policy family, C's
/// sharding, the schedule, the cost model and the description. ShC is NaturalOutput or a
/// requested TensorSharding (replicated, split over contracted axes: a ReduceScatter, or
/// Partial: the sum left pending).
template <fixed_string Spec, MeshType M, typename ShA, typename ShB, typename ShC = NaturalOutput,
          typename Variant = variant::Standard>
struct einsum_plan {
  static_assert(!detail::has_redistributed_v<ShA> && !detail::has_redistributed_v<ShB>,
                "shardwise::einsum: an operand is BlockCyclic<...> or SplitFirstLarger<...>, which einsum does not "
                "plan; reshard it to blocks first, e.g. sw::reshard<TensorSharding<Split<\"r\">, Split<\"c\">>>(a)");
 private:
  using checks = detail::einsum_checks<Spec, M, ShA, ShB, ShC, Variant>;
  static_assert(sizeof(detail::checked_einsum_names<checks::shapes_ok, M, ShA>) > 0 &&
                sizeof(detail::checked_einsum_names<checks::shapes_ok, M, ShB>) > 0 &&
                sizeof(detail::checked_einsum_names<checks::shapes_ok && !std::is_same_v<ShC, NaturalOutput>, M,
                                                    std::conditional_t<std::is_same_v<ShC, NaturalOutput>, ShA, ShC>>) > 0);
  static constexpr auto note = detail::exact_note_of<checks::note.view().size() + 1>(checks::note);
  static_assert(sizeof(detail::einsum_report<checks::error == detail::EinsumError::invalid_sharding
                                                 ? detail::EinsumError::none
                                                 : checks::error,
                                             note>) > 0);
  using analysis = typename checks::analysis;

 public:
  /// The index letters of A, B and C, as the spec gives them.
  static constexpr detail::contraction_indices indices = checks::indices;
  /// C's sharding without resharding: each free index split as in its input, batch indices
  /// over the axes both inputs start with, pending sums reduced.
  using natural_output = typename analysis::natural;
  /// The sharding of the result.
  using output_sharding = typename analysis::output;
  /// One of policy::Unsharded, Batched, MatchedInner, UnmatchedInner, Outer, Full.
  using policy = typename detail::policy_type<detail::classify(indices, analysis::kernel_a, analysis::kernel_b)>::type;
  using variant_type = Variant;  ///< The variant, as given.
  /// Panel width of a SUMMA or 2.5D variant (0 for the others).
  static constexpr int summa_panel_width = analysis::panel_width;
  /// The steps the kernel runs, in order (describe() names them). When an input is sliced to
  /// match the other (has_alternative), the kernel runs these or alternative_schedule, per call.
  static constexpr Schedule schedule = analysis::data.steps;

  /// Shardings before the first step: A and B as given, C as the local contraction leaves it.
  static constexpr detail::operand_axes initial_state() { return analysis::data.start; }

  /// Whether `schedule` slices an input where gathering the other is the alternative: the
  /// schedule that runs is then chosen per call from the extents (uses_alternative).
  static constexpr bool has_alternative = analysis::has_alternative;
  /// The alternative: the other input gathered instead of the slice (the same output).
  static constexpr Schedule alternative_schedule = has_alternative ? analysis::gather_data.steps : schedule;
  /// Shardings before the alternative's first step.
  static constexpr detail::operand_axes alternative_state() {
    return has_alternative ? analysis::gather_data.start : analysis::data.start;
  }
  /// Whether the alternative runs for these extents: its busiest rank sends fewer bytes than
  /// `schedule`'s, or as many in no more messages. Every rank agrees on the extents before the
  /// einsum runs, so every rank chooses the same; traffic, max_traffic and footprint_bytes
  /// model the schedule chosen.
  static constexpr bool uses_alternative(const M& mesh, const IndexExtents& extents, std::int64_t scalar_bytes) {
    if constexpr (!has_alternative) return false;
    else
      return detail::prefer_other(mesh, {schedule, analysis::data.start}, {alternative_schedule, alternative_state()},
                                  detail::operand_extents_of(indices, extents), scalar_bytes, summa_panel_width);
  }

  /// Bytes and messages the rank at `coordinate` sends, for index extents `extents`.
  static constexpr Traffic traffic(const M& mesh, const typename M::coordinate_type& coordinate,
                                   const IndexExtents& extents, std::int64_t scalar_bytes) {
    const bool alt = uses_alternative(mesh, extents, scalar_bytes);
    return detail::schedule_traffic(alt ? alternative_schedule : schedule, alt ? alternative_state() : initial_state(),
                                    detail::operand_extents_of(indices, extents),
                                    detail::block_geometry(mesh, coordinate), scalar_bytes, summa_panel_width);
  }
  /// The largest traffic over all ranks (the bottleneck rank).
  static constexpr Traffic max_traffic(const M& mesh, const IndexExtents& extents, std::int64_t scalar_bytes) {
    const bool alt = uses_alternative(mesh, extents, scalar_bytes);
    const auto global = detail::operand_extents_of(indices, extents);
    return detail::max_over_ranks(mesh, [&](const auto& c) {
      return detail::schedule_traffic(alt ? alternative_schedule : schedule, alt ? alternative_state() : initial_state(),
                                      global, detail::block_geometry(mesh, c), scalar_bytes, summa_panel_width);
    });
  }

  /// The program for operands and result stored row-major (as ShardedTensor stores them).
  static constexpr detail::program program =
      detail::lower(schedule, analysis::data.start, indices, summa_panel_width,
                    detail::dim_order::row_major(indices.ranks[0]), detail::dim_order::row_major(indices.ranks[1]), {},
                    detail::dim_order::row_major(indices.ranks[2]));
  /// The alternative's program (the same as `program` without an alternative).
  static constexpr detail::program alternative_program =
      has_alternative ? detail::lower(alternative_schedule, alternative_state(), indices, summa_panel_width,
                                      detail::dim_order::row_major(indices.ranks[0]),
                                      detail::dim_order::row_major(indices.ranks[1]), {},
                                      detail::dim_order::row_major(indices.ranks[2]))
                      : program;

  /// Bytes this rank holds during the einsum: its blocks of A, B and C, the buffers the
  /// schedule names (gathered operands, C between steps, ring and SUMMA buffers) and the copies
  /// that put an operand in the order its GEMM or collective needs (at most one per operand).
  static constexpr std::int64_t footprint_bytes(const M& mesh, const typename M::coordinate_type& coordinate,
                                                const IndexExtents& extents, std::int64_t scalar_bytes) {
    const auto global = detail::operand_extents_of(indices, extents);
    const detail::block_geometry geo(mesh, coordinate);
    const bool alt = uses_alternative(mesh, extents, scalar_bytes);
    return scalar_bytes * (detail::schedule_footprint(alt ? alternative_schedule : schedule,
                                                      alt ? alternative_state() : initial_state(), analysis::c, global,
                                                      geo, summa_panel_width) +
                           detail::pack_elements(alt ? alternative_program : program, global, geo));
  }

  /// One line: "Outer: AllGather B along m over x -> local GEMM => C[-, -, x]" (`schedule`).
  static std::string describe() {
    return detail::cat(policy::name, ": ", detail::describe_schedule(schedule, indices.names, M::names), " => C",
                       output_sharding::to_string());
  }
  /// describe(), and where the plan has an alternative, that one too and how it is chosen:
  /// "...; or, when its busiest rank sends no more bytes for the extents, AllGather A along j
  /// over x -> local GEMM".
  static std::string describe_choice() {
    if constexpr (!has_alternative) return describe();
    else
      return detail::cat(describe(), "; or, when its busiest rank sends no more bytes for the extents, ",
                         detail::describe_schedule(alternative_schedule, indices.names, M::names));
  }
};

}  // namespace shardwise
