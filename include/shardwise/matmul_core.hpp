// shardwise/matmul_core.hpp: what every path of C = A * B shares.
//
// The operands' checks (check_operands: one agreement on usability, groups, shapes and the
// call's types), the planned programs, and the product of block-sharded operands by their plan
// (block_matmul). matmul.hpp's entry points and redistributed_matmul.hpp's block-cyclic path
// both build on it, so neither has to include the other to reach it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include "shardwise/detail/separate_compilation.hpp"
#include "shardwise/detail/type_fingerprint.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/memory_budget.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/sharded_matrix.hpp"

namespace shardwise {

namespace detail {

/// The plan lowered for operands stored in OA, OB and a result in OC.
template <typename Plan, int OA, int OB, int OC>
inline constexpr program matmul_program = lower(Plan::schedule, Plan::initial_state(), matmul_indices,
                                                Plan::summa_panel_width, matrix_order(OA), matrix_order(OB), {},
                                                matrix_order(OC));
/// Its alternative schedule (matmul_plan::has_alternative) lowered the same way.
template <typename Plan, int OA, int OB, int OC>
inline constexpr program matmul_alternative_program =
    lower(Plan::alternative_schedule, Plan::alternative_state(), matmul_indices, Plan::summa_panel_width,
          matrix_order(OA), matrix_order(OB), {}, matrix_order(OC));

/// The names of the values a matmul's ranks agree on (check_matmul_operands).
inline constexpr std::string_view matmul_agreed_names =
    "rows of A|columns of A|rows of B|columns of B|rows of C|columns of C|the call's types (a fingerprint of the "
    "scalar, mesh, shardings, storage orders and variant: every rank must call with the same types)|the memory "
    "budget's m|the memory budget's k|the memory budget's n";

/// The checks of matmul, matmul_into and gemm (C's facts absent for matmul): one agreement
/// (agree_on_operands) on the operands' usability and groups, their shapes (`shapes`: A's,
/// B's and C's rows and columns, C's 0 when absent), the call's type `fingerprint` and the
/// shape a memory budget was checked for (`budget`, or null); then the shapes must fit
/// together. Out of line and independent of the operands' types: compiled once.
[[gnu::noinline]] SHARDWISE_DECL void check_matmul_operands(const char* operation,
                                                            std::span<const OperandFacts> operands,
                                                            const std::int64_t* shapes, std::int64_t fingerprint,
                                                            const MatmulShape* budget)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  const bool with_c = operands.size() > 2;
  const std::int64_t values[] = {shapes[0], shapes[1], shapes[2], shapes[3], shapes[4], shapes[5], fingerprint,
                                 budget ? budget->m : 0, budget ? budget->k : 0, budget ? budget->n : 0};
  agree_on_operands(operands, values, {}, operation,
                    with_c ? "the shapes of A, B and C" : "the shapes of A and B",
                    matmul_agreed_names, constructed_locally);
  const std::int64_t m = shapes[0], k = shapes[1], kb = shapes[2], n = shapes[3];
  if (k != kb) fail({operation, ": the inner dimensions disagree: A is ", m, " x ", k, " but B is ", kb, " x ", n});
  if (with_c && (shapes[4] != m || shapes[5] != n))
    fail({operation, ": C is ", shapes[4], " x ", shapes[5], " but A * B is ", m, " x ", n});
  if (budget && (m != budget->m || k != budget->k || n != budget->n))
    fail({operation, ": the memory budget was checked for m = ", budget->m, ", k = ", budget->k, ", n = ", budget->n,
          " but A is ", m, " x ", k, " and B is ", kb, " x ", n});
}
#else
;
#endif

/// The result type of a call that does not compile (only its static_asserts are reported).
struct invalid_matmul {};

/// check_matmul_operands for operands of these types (c null for matmul); `Call` adds what else
/// tells the call's types apart (the plan: its requested output and variant). A memory budget's
/// shape is agreed as values (`budget`).
template <typename Call = void, typename A, typename B, typename C>
void check_operands(const char* operation, const A& a, const B& b, const C* c, const MatmulShape* budget = nullptr) {
  const OperandFacts facts[] = {a.facts("A"), b.facts("B"), c ? c->facts("C") : OperandFacts{}};
  const std::int64_t shapes[] = {a.rows(), a.cols(), b.rows(), b.cols(), c ? c->rows() : 0, c ? c->cols() : 0};
  check_matmul_operands(operation, std::span<const OperandFacts>(facts, c ? 3 : 2), shapes,
                        type_fingerprint<A, B, C, Call>, budget);
}

/// Whether the memory of this rank's blocks of x and y overlaps (an empty block overlaps
/// nothing): then a product into one of them reads the other through a temporary.
template <typename X, typename Y>
bool blocks_overlap(const X& x, const Y& y) {
  const auto span_of = [](const auto& z) -> std::pair<const char*, const char*> {
    const char* first = reinterpret_cast<const char*>(z.data());
    std::int64_t last = 0;  // the largest element offset (strides are checked non-negative)
    for (std::size_t d = 0; d < std::remove_cvref_t<decltype(z)>::rank; ++d) {
      if (z.local_extents()[d] == 0) return {first, first};
      last += (z.local_extents()[d] - 1) * z.local_strides()[d];
    }
    using S = typename std::remove_cvref_t<decltype(z)>::scalar_type;
    return {first, first + (last + 1) * static_cast<std::int64_t>(sizeof(S))};
  };
  const auto [x0, x1] = span_of(x);
  const auto [y0, y1] = span_of(y);
  return x0 != x1 && y0 != y1 && x0 < y1 && y0 < x1;
}

/// Runs the plan into `out`, this rank's block of C, contiguous in the storage order OC.
template <typename Plan, int OC, typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB,
          int OB, typename WB>
void run_matmul_into(Scalar* out, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
                     const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Scalar alpha = Scalar(1),
                     Scalar beta = Scalar(0)) {
  // A view's block is handed over where it lies, with its strides: the executor reads it in
  // place or packs it where the program's step needs contiguous data.
  const MatmulShape shape{.m = a.rows(), .k = a.cols(), .n = b.cols()};
  const operation_io<Scalar> io{.a = a.data(), .b = b.data(), .out = out, .alpha = alpha,
                                .beta = beta, .strides = {block_strides(a), block_strides(b), nullptr}};
  // A plan that slices an input has a gathering alternative: the one that sends fewer bytes
  // for these shapes runs (the same choice on every rank: the shapes were agreed first).
  if constexpr (Plan::has_alternative) {
    if (Plan::uses_alternative(a.groups().mesh(), shape, static_cast<std::int64_t>(sizeof(Scalar))))
      return execute<matmul_alternative_program<Plan, OA, OB, OC>, Scalar>(a.groups().state("matmul"),
                                                                          matmul_extents(shape), io);
  }
  execute<matmul_program<Plan, OA, OB, OC>, Scalar>(a.groups().state("matmul"), matmul_extents(shape), io);
}

template <typename Plan, typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB,
          typename WB, typename ShC, int OC>
void run_matmul(ShardedMatrix<Scalar, M, ShC, OC>& c, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
                const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Scalar alpha = Scalar(1), Scalar beta = Scalar(0)) {
  run_matmul_into<Plan, OC>(c.local().data(), a, b, alpha, beta);
}

/// C = A * B for operands whose dimensions are blocks (Split, Replicated, Partial): the plan of
/// matmul_plan, run into a new C. matmul's own path, and the block-cyclic path's product once
/// its operands are redistributed to blocks.
template <typename ShC, typename Variant, typename Scalar, MeshType M, typename ShA, int OA, typename WA,
          typename ShB, int OB, typename WB>
auto block_matmul(const ShardedMatrix<Scalar, M, ShA, OA, WA>& a, const ShardedMatrix<Scalar, M, ShB, OB, WB>& b) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (!Plan::compiles) {
    return invalid_matmul{};  // the plan's static_assert said why; nothing more to report
  } else {
    using Result = ShardedMatrix<Scalar, M, typename Plan::output_sharding>;
    check_operands<Plan>("shardwise::matmul", a, b, static_cast<const Result*>(nullptr));
    Result c(a.groups(), a.rows(), b.cols(), uninitialized);
    run_matmul<Plan>(c, a, b);
    return c;
  }
}

}  // namespace detail

}  // namespace shardwise
