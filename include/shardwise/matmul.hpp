// shardwise/matmul.hpp: C = A * B on sharded matrices.
//
// matmul_plan (plan/matmul_plan.hpp) picks the policy and writes its schedule at compile
// time; the program (plan/program.hpp) fixes the storage order of every block for the
// operands' orders; the one executor (kernels/executor.hpp) runs it. So the kernel, the cost
// model and describe() cannot disagree, and a new plan adds no code.
//
//   auto C  = sw::matmul(A, B);                         // natural output [am, bn]
//   auto Cr = sw::matmul<sw::TensorSharding<sw::Replicated, sw::Replicated>>(A, B);
//   auto Cp = sw::matmul<Sharding with Partial<...>>(A, B);   // skip the reduction;
//   auto Cs = sw::reduce(Cp);                                  // ... finish it later
//   sw::matmul(A, B, sw::ring);  sw::matmul(A, B, sw::summa);  // variants, per call
//   sw::matmul_into(C, A, B);                           // reuse C's storage (no allocation)
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "shardwise/detail/separate_compilation.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/memory_budget.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/reshard.hpp"
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

/// What the checks of a matmul need of an operand, whatever its type.
struct matmul_operand {
  const void* groups = nullptr;  ///< the shared group state (null: moved from)
  std::int64_t rows = 0, cols = 0;
  bool released = false;  ///< release() moved its block out
};

/// The checks of matmul and matmul_into (c null for matmul): operands not moved from, on one
/// group mesh, with shapes every rank agrees on (collective over `world`) and that fit
/// together. Out of line and independent of the operands' types: compiled once.
[[gnu::noinline]] SHARDWISE_DECL void check_matmul_operands(const char* operation, AnyCommunicator* world,
                                                            const matmul_operand& a, const matmul_operand& b,
                                                            const matmul_operand* c)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  const char* roles[] = {"A", "B", "C"};
  const matmul_operand* operands[] = {&a, &b, c};
  for (int i = 0; i < (c ? 3 : 2); ++i)
    if (operands[i]->groups == nullptr || operands[i]->released)
      throw_unusable(operation, roles[i], "matrix", operands[i]->released);
  if (a.groups != b.groups || (c && c->groups != a.groups))
    fail({operation, ": the operands are bound to different ProcessGroupMesh objects; build all from the same one"});
  const std::int64_t shapes[] = {a.rows, a.cols, b.rows, b.cols, c ? c->rows : 0, c ? c->cols : 0};
  agree_on_all_ranks(*world, std::span<const std::int64_t>(shapes, c ? 6 : 4), {}, operation,
                     c ? "the shapes of A, B and C" : "the shapes of A and B",
                     "rows of A|columns of A|rows of B|columns of B|rows of C|columns of C", constructed_locally);
  if (a.cols != b.rows)
    fail({operation, ": the inner dimensions disagree: A is ", a.rows, " x ", a.cols, " but B is ", b.rows, " x ", b.cols});
  if (c && (c->rows != a.rows || c->cols != b.cols))
    fail({operation, ": C is ", c->rows, " x ", c->cols, " but A * B is ", a.rows, " x ", b.cols});
}
#else
;
#endif

/// The result type of a call that does not compile (only its static_asserts are reported).
struct invalid_matmul {};

template <typename X>
matmul_operand operand_of(const X& x) {
  return {x.groups() ? static_cast<const void*>(&x.groups().state()) : nullptr, x.rows(), x.cols(), x.released()};
}

template <typename A, typename B, typename C>
void check_operands(const char* operation, const A& a, const B& b, const C* c) {
  const matmul_operand oa = operand_of(a), ob = operand_of(b);
  const matmul_operand oc = c ? operand_of(*c) : matmul_operand{};
  check_matmul_operands(operation, a.valid() ? &a.groups().world() : nullptr, oa, ob, c ? &oc : nullptr);
}

template <typename Plan, typename Scalar, MeshType M, typename ShA, int OA, typename ShB, int OB, typename ShC, int OC>
void run_matmul(ShardedMatrix<Scalar, M, ShC, OC>& c, const ShardedMatrix<Scalar, M, ShA, OA>& a,
                const ShardedMatrix<Scalar, M, ShB, OB>& b) {
  const MatmulShape shape{a.rows(), a.cols(), b.cols()};
  const operation_io<Scalar> io{a.local().data(), b.local().data(), nullptr, c.local().data()};
  // A plan that slices an input has a gathering alternative: the one that sends fewer bytes
  // for these shapes runs (the same choice on every rank: the shapes were agreed first).
  if constexpr (Plan::has_alternative) {
    if (Plan::uses_alternative(a.groups().mesh(), shape, static_cast<std::int64_t>(sizeof(Scalar))))
      return execute<matmul_alternative_program<Plan, OA, OB, OC>, Scalar>(a.groups().state("matmul"),
                                                                          matmul_extents(shape), io);
  }
  execute<matmul_program<Plan, OA, OB, OC>, Scalar>(a.groups().state("matmul"), matmul_extents(shape), io);
}

}  // namespace detail

/// C = A * B. ShC: NaturalOutput (C = [am, bn]) or a requested TensorSharding.
/// Variant: standard, ring or summa (see plan/matmul_plan.hpp).
template <typename ShC = NaturalOutput, typename Scalar, MeshType M, typename ShA, int OA, typename ShB, int OB,
          detail::MatmulVariant Variant = variant::Standard>
auto matmul(const ShardedMatrix<Scalar, M, ShA, OA>& a, const ShardedMatrix<Scalar, M, ShB, OB>& b, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (!Plan::compiles) {
    return detail::invalid_matmul{};  // the plan's static_assert said why; nothing more to report
  } else {
    using Result = ShardedMatrix<Scalar, M, typename Plan::output_sharding>;
    detail::check_operands<ShardedMatrix<Scalar, M, ShA, OA>, ShardedMatrix<Scalar, M, ShB, OB>, Result>(
        "shardwise::matmul", a, b, nullptr);
    Result c(a.groups(), a.rows(), b.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(c, a, b);
    return c;
  }
}

/// C = A * B with a per-rank memory budget checked at compile time (plan/memory_budget.hpp):
/// the plan's footprint for the budget's shape must fit, and A and B must have that shape.
template <typename ShC = NaturalOutput, typename Scalar, MeshType M, typename ShA, int OA, typename ShB, int OB,
          detail::MatmulVariant Variant, MatmulShape Shape, std::int64_t Bytes>
auto matmul(const ShardedMatrix<Scalar, M, ShA, OA>& a, const ShardedMatrix<Scalar, M, ShB, OB>& b, Variant,
            MemoryBudget<Shape, Bytes>) {
  static_assert(sizeof(detail::checked_budget<M, ShA, ShB, ShC, Variant, MemoryBudget<Shape, Bytes>,
                                              static_cast<std::int64_t>(sizeof(Scalar))>) > 0);
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  using Result = ShardedMatrix<Scalar, M, typename Plan::output_sharding>;
  // The shapes are agreed across ranks first, so a shape unlike the budget's is the same error on every rank.
  detail::check_operands<ShardedMatrix<Scalar, M, ShA, OA>, ShardedMatrix<Scalar, M, ShB, OB>, Result>(
      "shardwise::matmul", a, b, nullptr);
  if (a.rows() != Shape.m || a.cols() != Shape.k || b.rows() != Shape.k || b.cols() != Shape.n)
    detail::fail({"shardwise::matmul: the memory budget was checked for m = ", Shape.m, ", k = ", Shape.k, ", n = ",
                  Shape.n, " but A is ", a.rows(), " x ", a.cols(), " and B is ", b.rows(), " x ", b.cols()});
  Result c(a.groups(), a.rows(), b.cols(), detail::uninitialized);
  detail::run_matmul<Plan>(c, a, b);
  return c;
}

/// C = A * B into existing storage; the requested output is C's own sharding. C may be A or
/// B (the same object): the product then goes through a temporary, and C gets the result.
template <typename Scalar, MeshType M, typename ShA, int OA, typename ShB, int OB, typename ShC, int OC,
          detail::MatmulVariant Variant = variant::Standard>
void matmul_into(ShardedMatrix<Scalar, M, ShC, OC>& c, const ShardedMatrix<Scalar, M, ShA, OA>& a,
                 const ShardedMatrix<Scalar, M, ShB, OB>& b, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (Plan::compiles) {
    detail::check_operands("shardwise::matmul_into", a, b, &c);
    const bool aliased = c.local().data() == a.local().data() || c.local().data() == b.local().data();
    if (!aliased) return detail::run_matmul<Plan>(c, a, b);
    ShardedMatrix<Scalar, M, ShC, OC> result(c.groups(), c.rows(), c.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(result, a, b);
    c = std::move(result);
  }
}

namespace detail {

template <typename T>
inline constexpr bool is_sharded_matrix_v = false;
template <typename Scalar, MeshType M, typename Sh, int Order>
inline constexpr bool is_sharded_matrix_v<ShardedMatrix<Scalar, M, Sh, Order>> = true;

/// What a call to matmul (Into false) or matmul_into (Into true) with arguments of these types
/// got wrong, as a static_assert each. (A variant is the third argument of matmul, the fourth
/// of matmul_into.)
template <bool Into, typename A, typename B, typename... Variant>
struct matmul_misuse {
  static_assert(is_sharded_matrix_v<A> && is_sharded_matrix_v<B>,
                "shardwise::matmul: A and B must both be shardwise::ShardedMatrix objects; an Eigen matrix becomes "
                "one with ShardedMatrix<Scalar, Mesh, Sharding>::distribute(groups, matrix)");
  static constexpr bool both = is_sharded_matrix_v<A> && is_sharded_matrix_v<B>;
  static_assert(!both || std::is_same_v<typename A::scalar_type, typename B::scalar_type>,
                "shardwise::matmul: A and B have different scalar types (float and double); convert one, e.g. "
                "distribute a .cast<double>() of it");
  static_assert(!both || std::is_same_v<typename A::mesh_type, typename B::mesh_type>,
                "shardwise::matmul: A and B are sharded over different Mesh types; build both on the same "
                "ProcessGroupMesh<Mesh<...>>");
  static constexpr bool variant_ok = sizeof...(Variant) <= 1 && (MatmulVariant<Variant> && ...);
  static_assert(Into || variant_ok,
                "shardwise::matmul: the third argument must be a variant (sw::standard, sw::ring, sw::summa, "
                "sw::summa_25d<...>, sw::via<...>), optionally followed by a sw::memory_budget<...>");
  static_assert(!Into || variant_ok,
                "shardwise::matmul_into(C, A, B, variant): the fourth argument must be a variant (sw::standard, "
                "sw::ring, sw::summa, sw::summa_25d<...>, sw::via<...>) and there is no fifth; matmul_into writes "
                "C = A * B and takes no alpha or beta");
  /// Whether one of the messages above was reported.
  static constexpr bool explained = [] {
    if constexpr (!both) return true;
    else
      return !std::is_same_v<typename A::scalar_type, typename B::scalar_type> ||
             !std::is_same_v<typename A::mesh_type, typename B::mesh_type> || !variant_ok;
  }();
};

}  // namespace detail

/// Anything else: the static_assert that names the mistake, reported at the call (the return
/// type is deduced there), instead of a failed overload resolution.
template <typename ShC = NaturalOutput, typename A, typename B, typename... Variant>
auto matmul(const A&, const B&, Variant...) {
  static_assert(detail::matmul_misuse<false, A, B, Variant...>::explained,
                "shardwise::matmul: these arguments do not make a matmul; see shardwise/matmul.hpp for its forms");
  return detail::invalid_matmul{};
}

/// The same for matmul_into.
template <typename C, typename A, typename B, typename... Variant>
auto matmul_into(C&, const A&, const B&, Variant...) {
  using misuse = detail::matmul_misuse<true, A, B, Variant...>;
  static_assert(misuse::explained,
                "shardwise::matmul_into: C must be a shardwise::ShardedMatrix on the same Mesh, with the same scalar "
                "type as A and B");
  return detail::invalid_matmul{};
}

}  // namespace shardwise
