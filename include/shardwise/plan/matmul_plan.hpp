// shardwise/plan/matmul_plan.hpp: which matmul kernel runs, and what it communicates.
//
// C[m, n] = A[m, k] * B[k, n] is the contraction "mk,kn->mn" (contraction.hpp). From the
// mesh and the shardings of A and B the compiler also names its policy family: Unsharded, MatchedInner, UnmatchedInner, Outer, Full. matmul_plan holds the
// schedule (constexpr data), the cost model, the footprint and describe(); the executor
// (kernels/executor.hpp) runs that same schedule. Pure compile-time: no MPI, no Eigen.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "shardwise/detail/named_fields.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/einsum_plan.hpp"
#include "shardwise/plan/policy.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/describe.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

/// Global matmul shape: C[m,n] = A[m,k] * B[k,n]. Written by name, `{.m = 3000, .k = 400, .n = 50}`:
/// a positional `{3000, 400, 50}` does not compile (detail/named_fields.hpp says why).
struct MatmulShape {
  /// Makes a positional initializer a compile error; holds nothing.
  /// (Not [[no_unique_address]]: clang 16 miscompiles a designated initializer of a struct
  /// whose empty first member overlaps the next one; the 8 bytes it costs are nothing.)
  detail::named_fields_only names_required{};
  /// Rows of A and C, the contracted extent, columns of B and C.
  ///@{
  std::int64_t m = 0, k = 0, n = 0;
  ///@}
  /// Equal extents.
  friend constexpr bool operator==(const MatmulShape&, const MatmulShape&) = default;
};

namespace detail {

/// Global extents of A, B and C.
constexpr operand_extents matmul_extents(const MatmulShape& s) { return {{{s.m, s.k}, {s.k, s.n}, {s.m, s.n}}}; }

/// Every way a matmul can fail to plan, with its message: the static_asserts of matmul_plan and
/// matmul_error_v both read this one list.
#define SHARDWISE_MATMUL_ERRORS(X)                                                                                   \
  X(input_partial, "shardwise::matmul: an input is Partial (a pending sum); call reduce() on it first")              \
  X(same_axis_splits_m_and_n,                                                                                        \
    "shardwise::matmul: the same mesh axis splits the rows of A (m) and the columns of B (n), so C[m, n] would "     \
    "need it twice; split m and n over different axes, or replicate one")                                            \
  X(output_partial_not_pending,                                                                                      \
    "shardwise::matmul: the requested output is Partial over an axis that this product does not leave pending; "     \
    "only the k axes shared by A and B (ak = bk) can stay Partial")                                                  \
  X(output_rows_unreachable,                                                                                         \
    "shardwise::matmul: the requested output cannot be reached for the rows (m): keep A's row axes, drop minor "     \
    "ones (AllGather), or add the reduced k axes as minor ones (ReduceScatter)")                                     \
  X(output_cols_unreachable,                                                                                         \
    "shardwise::matmul: the requested output cannot be reached for the columns (n): keep B's column axes, drop "     \
    "minor ones (AllGather), or add the reduced k axes as minor ones (ReduceScatter)")                               \
  X(ring_needs_one_gather_or_scatter,                                                                                \
    "shardwise::matmul: the ring variant overlaps exactly one AllGather of A or B along k, or the ReduceScatter "    \
    "right after the GEMM; this schedule has neither, so use variant::Standard")                                     \
  X(summa_needs_grid_layout,                                                                                         \
    "shardwise::matmul: the SUMMA variant needs A = [X, Y] and B = [X, Y] (A's rows and B's k over the same axes "   \
    "X, A's k and B's columns over the same axes Y); use variant::Standard")                                         \
  X(summa_25d_layers_split_inputs,                                                                                   \
    "shardwise::matmul: the 2.5D variant needs A = [X, Y] and B = [X, Y] replicated over its layer axes (no layer "  \
    "axis may split A or B); from operands stored once, gather to those layouts with sw::via<KernelA, KernelB, "    \
    "variant::Summa25D<...>>")                                                                                       \
  X(kernel_layout_unreachable,                                                                                       \
    "shardwise::matmul: via<KernelA, KernelB>: each kernel layout must be its operand's sharding with minor axes "   \
    "gathered (dropped from the end of a dimension's axis list)")                                                    \
  X(unknown_layer_axis, "shardwise::matmul: the 2.5D variant names a layer axis the mesh does not have; check the "   \
                        "spelling against the Mesh's Axis<\"name\", extent> list")

enum class MatmulError {
  none,
  invalid_sharding,  // reported by checked_sharding's own messages
#define SHARDWISE_MATMUL_ERROR_ENUM(name, text) name,
  SHARDWISE_MATMUL_ERRORS(SHARDWISE_MATMUL_ERROR_ENUM)
#undef SHARDWISE_MATMUL_ERROR_ENUM
};

constexpr std::string_view matmul_error_text(MatmulError e) {
  switch (e) {
    case MatmulError::none: return {};
    case MatmulError::invalid_sharding:
      return "shardwise::matmul: a sharding does not fit the mesh or is not a matrix sharding (see "
             "shardwise::ShardedMatrix's messages)";
#define SHARDWISE_MATMUL_ERROR_CASE(name, text) \
  case MatmulError::name:                       \
    return text;
      SHARDWISE_MATMUL_ERRORS(SHARDWISE_MATMUL_ERROR_CASE)
#undef SHARDWISE_MATMUL_ERROR_CASE
  }
  return {};
}

constexpr MatmulError matmul_error_of(const plan_error& e) {
  switch (e.code) {
    case PlanError::none: return MatmulError::none;
    case PlanError::same_axis_splits_two_output_dims: return MatmulError::same_axis_splits_m_and_n;
    case PlanError::output_partial_not_pending: return MatmulError::output_partial_not_pending;
    case PlanError::output_dim_unreachable:
      return e.dim == 0 ? MatmulError::output_rows_unreachable : MatmulError::output_cols_unreachable;
    case PlanError::ring_needs_one_gather_or_scatter: return MatmulError::ring_needs_one_gather_or_scatter;
    case PlanError::summa_needs_grid_layout: return MatmulError::summa_needs_grid_layout;
    case PlanError::summa_25d_layers_split_inputs: return MatmulError::summa_25d_layers_split_inputs;
    case PlanError::kernel_layout_unreachable: return MatmulError::kernel_layout_unreachable;
  }
  return MatmulError::none;
}

/// Everything a matmul plan computes (the contraction "mk,kn->mn"), or why it cannot be made;
/// never a hard error, so that valid_matmul can ask without failing a compile.
template <MeshType M, typename ShA, typename ShB, typename ShC, typename Variant>
struct matmul_analysis : contraction_analysis<M, matmul_indices, ShA, ShB, ShC, Variant> {
  using base = contraction_analysis<M, matmul_indices, ShA, ShB, ShC, Variant>;
  static constexpr MatmulError error = [] {
    if (!base::shardings_valid) return MatmulError::invalid_sharding;
    if (base::inputs_partial) return MatmulError::input_partial;
    if (!base::layers_known) return MatmulError::unknown_layer_axis;
    return matmul_error_of(base::error);
  }();
};

/// A requested output that is NaturalOutput, or a sharding of two dimensions (or not a
/// TensorSharding at all, which has a message of its own).
template <typename ShC>
inline constexpr bool matrix_output_request = [] {
  if constexpr (is_tensor_sharding_v<ShC>) return ShC::rank == 2;
  else return true;
}();

}  // namespace detail

/// Whether C = A * B with these shardings (and requested output, and variant) has a plan:
/// a question generic code can ask without failing a compile.
template <MeshType M, typename ShA, typename ShB, typename ShC = NaturalOutput, typename Variant = variant::Standard>
inline constexpr bool valid_matmul =
    detail::matmul_analysis<M, ShA, ShB, ShC, Variant>::error == detail::MatmulError::none;

/// Why it has none: the text matmul's static_assert would print (empty when valid_matmul).
template <MeshType M, typename ShA, typename ShB, typename ShC = NaturalOutput, typename Variant = variant::Standard>
inline constexpr std::string_view matmul_error_v =
    detail::matmul_error_text(detail::matmul_analysis<M, ShA, ShB, ShC, Variant>::error);

/// Everything the compiler decides about C = A * B: policy, output sharding, schedule, cost
/// model and description. ShC is NaturalOutput or a requested TensorSharding (e.g.
/// replicated, a ReduceScatter split, or one with Partial).
template <MeshType M, TensorShardingType ShA, TensorShardingType ShB, typename ShC = NaturalOutput,
          detail::MatmulVariant Variant = variant::Standard>
struct matmul_plan {
  // First, so that it is the first error: a requested C of another rank than a matrix's.
  static_assert(detail::matrix_output_request<ShC>,
                "shardwise::matmul: the requested sharding of C must have two dimensions, "
                "TensorSharding<rows, columns> (a Partial<...> may follow them): C = A * B is a matrix");
  static_assert(!ShA::is_redistributed && !ShB::is_redistributed,
                "shardwise::matmul_plan: plans are for block shardings; sw::matmul multiplies BlockCyclic and "
                "SplitFirstLarger operands by redistributing them to blocks (block_cyclic_matmul_plan says what "
                "that costs)");

 private:
  // Completing the checkers reports a bad sharding once, with its own message.
  // Via's kernel layouts are shardings too, checked the same way.
  static constexpr bool kernels_valid() {
    if constexpr (detail::variant_traits<Variant>::has_kernel)
      return detail::checked_sharding<M, typename detail::variant_traits<Variant>::kernel_a, 2>::value &&
             detail::checked_sharding<M, typename detail::variant_traits<Variant>::kernel_b, 2>::value;
    else
      return true;
  }
  static constexpr bool inputs_valid = detail::checked_sharding<M, ShA, 2>::value &&
                                       detail::checked_sharding<M, ShB, 2>::value && kernels_valid();
  using analysis = detail::matmul_analysis<M, ShA, ShB, ShC, Variant>;

 public:
  /// C = [am, bn]: what the policy produces without resharding.
  using natural_output = typename analysis::natural;
  /// The sharding of the result.
  using output_sharding = typename analysis::output;
  static_assert(detail::is_tensor_sharding_v<output_sharding>,
                "shardwise::matmul: the requested output must be a TensorSharding<rows, columns> "
                "(or NaturalOutput)");

 private:
  static constexpr bool output_checked() {
    if constexpr (detail::matrix_output_request<ShC>) return detail::checked_sharding<M, output_sharding, 2>::value;
    else return false;  // reported above, once
  }
  static constexpr bool output_valid = inputs_valid && output_checked();
  static constexpr detail::MatmulError error = output_valid ? analysis::error : detail::MatmulError::none;
#define SHARDWISE_MATMUL_ERROR_ASSERT(name, text) static_assert(error != detail::MatmulError::name, text);
  SHARDWISE_MATMUL_ERRORS(SHARDWISE_MATMUL_ERROR_ASSERT)
#undef SHARDWISE_MATMUL_ERROR_ASSERT

 public:
  /// False when one of the static_asserts above failed: the operations compile nothing more, so
  /// that the library's message is the only error.
  static constexpr bool compiles = output_valid && error == detail::MatmulError::none;

 public:
  /// One of policy::Unsharded, MatchedInner, UnmatchedInner, Outer, Full.
  using policy =
      typename detail::policy_type<detail::classify(detail::matmul_indices, analysis::kernel_a, analysis::kernel_b)>::type;
  using variant_type = Variant;  ///< The variant, as given.
  /// Panel width of a SUMMA or 2.5D variant (0 for the others).
  static constexpr int summa_panel_width = analysis::panel_width;
  /// The steps the kernel runs, in order (describe() names them). When an input is sliced to
  /// match the other (has_alternative), the kernel runs these or alternative_schedule, per call.
  static constexpr Schedule schedule = analysis::data.steps;

  /// Shardings before the first step: A and B as given, C as the local GEMM leaves it.
  static constexpr detail::operand_axes initial_state() { return analysis::data.start; }

  /// Whether `schedule` slices an input where gathering the other is the alternative (for example
  /// A[-, x] * B[-, -]: slice B along k over x -> local GEMM -> AllReduce C over x, or AllGather
  /// A along k over x -> local GEMM): the schedule that runs is chosen per call (uses_alternative).
  static constexpr bool has_alternative = analysis::has_alternative;
  /// The alternative: the other input gathered instead of the slice (the same output).
  static constexpr Schedule alternative_schedule = has_alternative ? analysis::gather_data.steps : schedule;
  /// Shardings before the alternative's first step.
  static constexpr detail::operand_axes alternative_state() {
    return has_alternative ? analysis::gather_data.start : analysis::data.start;
  }
  /// Whether the alternative runs for this shape: its busiest rank sends fewer bytes than
  /// `schedule`'s, or as many in no more messages (square matrices: the gather; a matrix times
  /// a vector: the slice). Every rank agrees on the shapes before the matmul runs, so every
  /// rank chooses the same; traffic, max_traffic and footprint_bytes model the schedule chosen.
  static constexpr bool uses_alternative(const M& mesh, MatmulShape shape, std::int64_t scalar_bytes) {
    if constexpr (!has_alternative) return false;
    else
      return detail::prefer_other(mesh, {schedule, analysis::data.start}, {alternative_schedule, alternative_state()},
                                  detail::matmul_extents(shape), scalar_bytes, summa_panel_width);
  }

  /// Bytes and messages the rank at `coordinate` sends (ring convention, traffic.hpp).
  static constexpr Traffic traffic(const M& mesh, const typename M::coordinate_type& coordinate, MatmulShape shape,
                                   std::int64_t scalar_bytes) {
    return chosen_traffic(uses_alternative(mesh, shape, scalar_bytes), mesh, coordinate, shape, scalar_bytes);
  }
  /// The largest traffic over all ranks (the bottleneck rank).
  static constexpr Traffic max_traffic(const M& mesh, MatmulShape shape, std::int64_t scalar_bytes) {
    const bool alt = uses_alternative(mesh, shape, scalar_bytes);
    return detail::max_over_ranks(mesh, [&](const auto& c) { return chosen_traffic(alt, mesh, c, shape, scalar_bytes); });
  }

  /// Bytes this rank holds during the matmul: its blocks of A, B and C plus the buffers the
  /// schedule names (see detail::matmul_footprint).
  static constexpr std::int64_t footprint_bytes(const M& mesh, const typename M::coordinate_type& coordinate,
                                                MatmulShape shape, std::int64_t scalar_bytes) {
    const bool alt = uses_alternative(mesh, shape, scalar_bytes);
    return scalar_bytes * detail::matmul_footprint(alt ? alternative_schedule : schedule,
                                                     alt ? alternative_state() : initial_state(), analysis::c,
                                                     detail::matmul_extents(shape), detail::block_geometry(mesh, coordinate),
                                                     summa_panel_width);
  }

  /// One line: "Outer: AllGather B along k over x -> local GEMM => C[x, -]" (`schedule`).
  static std::string describe() {
    return detail::cat(policy::name, ": ", detail::describe_schedule(schedule, detail::matmul_names, M::names), " => C",
                       output_sharding::to_string());
  }
  /// describe(), and where the plan has an alternative, that one too and how it is chosen:
  /// "UnmatchedInner: slice B along k over x -> local GEMM -> AllReduce C over x => C[-, -]; or,
  /// when its busiest rank sends no more bytes for the extents, AllGather A along k over x ->
  /// local GEMM".
  static std::string describe_choice() {
    if constexpr (!has_alternative) return describe();
    else
      return detail::cat(describe(), "; or, when its busiest rank sends no more bytes for the extents, ",
                         detail::describe_schedule(alternative_schedule, detail::matmul_names, M::names));
  }

 private:
  static constexpr Traffic chosen_traffic(bool alt, const M& mesh, const typename M::coordinate_type& coordinate,
                                          MatmulShape shape, std::int64_t scalar_bytes) {
    return detail::schedule_traffic(alt ? alternative_schedule : schedule, alt ? alternative_state() : initial_state(),
                                    detail::matmul_extents(shape), detail::block_geometry(mesh, coordinate), scalar_bytes,
                                    summa_panel_width);
  }
};

/// The policy family the compiler picks for A * B.
template <MeshType M, TensorShardingType ShA, TensorShardingType ShB>
using matmul_policy_t = typename matmul_plan<M, ShA, ShB>::policy;

/// The sharding of C for a requested output (NaturalOutput: [am, bn]).
template <MeshType M, TensorShardingType ShA, TensorShardingType ShB, typename ShC = NaturalOutput>
using matmul_output_t = typename matmul_plan<M, ShA, ShB, ShC>::output_sharding;

}  // namespace shardwise
