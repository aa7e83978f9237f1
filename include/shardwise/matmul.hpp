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

#include "shardwise/kernels/executor.hpp"
#include "shardwise/plan/matmul_plan.hpp"
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

template <typename A, typename B>
void check_operands(const A& a, const B& b) {
  if (!a.groups().shares_groups_with(b.groups()))
    throw std::invalid_argument(
        "shardwise::matmul: A and B are bound to different ProcessGroupMesh objects; build both from the same one");
  if (cross_rank_shape_checks())
    check_same_on_all_ranks(a.groups().world(), {a.rows(), a.cols(), b.rows(), b.cols()},
                            "the shapes of A and B given to matmul");
  if (a.cols() != b.rows())
    throw std::invalid_argument("shardwise::matmul: the inner dimensions disagree: A is " + std::to_string(a.rows()) +
                                " x " + std::to_string(a.cols()) + " but B is " + std::to_string(b.rows()) +
                                " x " + std::to_string(b.cols()));
}

template <typename Plan, typename Scalar, MeshType M, typename ShA, int OA, typename ShB, int OB, typename ShC, int OC>
void run_matmul(ShardedMatrix<Scalar, M, ShC, OC>& c, const ShardedMatrix<Scalar, M, ShA, OA>& a,
                const ShardedMatrix<Scalar, M, ShB, OB>& b) {
  execute<matmul_program<Plan, OA, OB, OC>, Scalar>(a.groups().state("matmul"),
                  matmul_extents({a.rows(), a.cols(), b.cols()}), {a.local().data(), b.local().data(), nullptr, c.local().data()});
}

}  // namespace detail

/// C = A * B. ShC: NaturalOutput (C = [am, bn]) or a requested TensorSharding.
/// Variant: standard, ring or summa (see plan/matmul_plan.hpp).
template <typename ShC = NaturalOutput, typename Scalar, MeshType M, typename ShA, int OA, typename ShB, int OB,
          detail::MatmulVariant Variant = variant::Standard>
auto matmul(const ShardedMatrix<Scalar, M, ShA, OA>& a, const ShardedMatrix<Scalar, M, ShB, OB>& b, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  detail::check_operands(a, b);
  ShardedMatrix<Scalar, M, typename Plan::output_sharding> c(a.groups(), a.rows(), b.cols(), detail::uninitialized);
  detail::run_matmul<Plan>(c, a, b);
  return c;
}

/// C = A * B into existing storage; the requested output is C's own sharding.
template <typename Scalar, MeshType M, typename ShA, int OA, typename ShB, int OB, typename ShC, int OC,
          detail::MatmulVariant Variant = variant::Standard>
void matmul_into(ShardedMatrix<Scalar, M, ShC, OC>& c, const ShardedMatrix<Scalar, M, ShA, OA>& a,
                 const ShardedMatrix<Scalar, M, ShB, OB>& b, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  detail::check_operands(a, b);
  if (!c.groups().shares_groups_with(a.groups()))
    throw std::invalid_argument(
        "shardwise::matmul_into: C is bound to another ProcessGroupMesh than A and B; build all from the same one");
  if (c.rows() != a.rows() || c.cols() != b.cols())
    throw std::invalid_argument("shardwise::matmul_into: C is " + std::to_string(c.rows()) + " x " +
                                std::to_string(c.cols()) + " but A * B is " + std::to_string(a.rows()) + " x " +
                                std::to_string(b.cols()));
  detail::run_matmul<Plan>(c, a, b);
}

/// Anything else: a readable error instead of a failed overload resolution.
template <typename ShC = NaturalOutput, typename A, typename B, typename... Variant>
void matmul(const A&, const B&, Variant...) {
  static_assert(sizeof(A) == 0,
                "shardwise::matmul: A and B must be ShardedMatrix objects with the same scalar type and the same "
                "Mesh (and the optional third argument a variant: sw::standard, sw::ring or sw::summa)");
}

}  // namespace shardwise
