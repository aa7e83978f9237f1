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
//   sw::matmul_into(sw::view<C_t>(groups, {m, n}, p, {1, ldc}, {m_local, n}), A, B);  // the caller's memory
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "shardwise/kernels/executor.hpp"
#include "shardwise/kernels/permute.hpp"
#include "shardwise/matmul_core.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/memory_budget.hpp"
#include "shardwise/redistributed_matmul.hpp"
#include "shardwise/sharded_matrix.hpp"

namespace shardwise {

/// C = A * B. ShC: NaturalOutput (C = [am, bn]) or a requested TensorSharding.
/// Variant: standard, ring or summa (see plan/matmul_plan.hpp). A and B may be views
/// (shardwise/view.hpp: sw::view, sw::transposed); C is owning.
template <typename ShC = NaturalOutput, typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB,
          int OB, typename WB, detail::MatmulVariant Variant = variant::Standard>
auto matmul(const ShardedMatrix<Scalar, M, ShA, OA, WA>& a, const ShardedMatrix<Scalar, M, ShB, OB, WB>& b,
            Variant = {}) {
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>)
    return detail::block_cyclic_matmul<ShC, Variant>(a, b);
  else
    return detail::block_matmul<ShC, Variant>(a, b);
}

/// C = A * B with a per-rank memory budget checked at compile time (plan/memory_budget.hpp):
/// the plan's footprint for the budget's shape must fit, and A and B must have that shape.
template <typename ShC = NaturalOutput, typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB,
          int OB, typename WB, detail::MatmulVariant Variant, MatmulShape Shape, std::int64_t Bytes>
auto matmul(const ShardedMatrix<Scalar, M, ShA, OA, WA>& a, const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Variant,
            MemoryBudget<Shape, Bytes>) {
  static_assert(sizeof(detail::checked_budget<M, ShA, ShB, ShC, Variant, MemoryBudget<Shape, Bytes>,
                                              static_cast<std::int64_t>(sizeof(Scalar))>) > 0);
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  using Result = ShardedMatrix<Scalar, M, typename Plan::output_sharding>;
  // The budget's shape is agreed across ranks with the operands' shapes, so a shape unlike the
  // budget's (or a budget of another shape on one rank) is the same error on every rank.
  constexpr MatmulShape budget = Shape;
  detail::check_operands<Plan>("shardwise::matmul", a, b, static_cast<const Result*>(nullptr), &budget);
  Result c(a.groups(), a.rows(), b.cols(), detail::uninitialized);
  detail::run_matmul<Plan>(c, a, b);
  return c;
}

/// C = A * B into existing storage; the requested output is C's own sharding. C may be A or
/// B (the same object): the product then goes through a temporary, and C gets the result.
/// A and B may be views; C is owning.
template <typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB, typename WB,
          typename ShC, int OC, detail::MatmulVariant Variant = variant::Standard>
void matmul_into(ShardedMatrix<Scalar, M, ShC, OC>& c, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
                 const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>) {
    detail::redistributed_gemm<Variant>("shardwise::matmul_into", Scalar(1), a, b, Scalar(0), c);
  } else if constexpr (Plan::compiles) {
    detail::check_operands<Plan>("shardwise::matmul_into", a, b, &c);
    const bool aliased = detail::blocks_overlap(c, a) || detail::blocks_overlap(c, b);
    if (!aliased) return detail::run_matmul<Plan>(c, a, b);
    ShardedMatrix<Scalar, M, ShC, OC> result(c.groups(), c.rows(), c.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(result, a, b);
    c = std::move(result);
  }
}

namespace detail {

/// Whether a view's block lies as an owning block of its storage order would (each inner run
/// unit-strided, the outer stride the inner extent; an empty block or a single run counts):
/// then the executor can write a product straight into it.
template <typename Scalar, MeshType M, typename Sh, int Order>
bool contiguous_block(const ShardedMatrix<Scalar, M, Sh, Order, View>& c) {
  const std::int64_t inner = Order == Eigen::RowMajor ? c.stride(1) : c.stride(0);
  const std::int64_t outer = Order == Eigen::RowMajor ? c.stride(0) : c.stride(1);
  const std::int64_t inner_extent = Order == Eigen::RowMajor ? c.local_cols() : c.local_rows();
  const std::int64_t outer_extent = Order == Eigen::RowMajor ? c.local_rows() : c.local_cols();
  return c.local_rows() * c.local_cols() == 0 ||
         ((inner == 1 || inner_extent == 1) && (outer == inner_extent || outer_extent == 1));
}

}  // namespace detail

/// C = A * B into a writable view C (shardwise/view.hpp; taken by value, as a view is a
/// handle): the caller's memory gets this rank's block of the product, the requested output
/// being C's sharding. When C's strides are those of a contiguous block in its storage order,
/// and C's memory is not A's or B's, the executor writes there directly; otherwise the product
/// is computed into an owning block and then copied into C's strides (one copy of C's block).
template <typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB, typename WB,
          typename ShC, int OC, detail::MatmulVariant Variant = variant::Standard>
void matmul_into(ShardedMatrix<Scalar, M, ShC, OC, View> c, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
                 const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>) {
    detail::redistributed_gemm<Variant>("shardwise::matmul_into", Scalar(1), a, b, Scalar(0), c);
  } else if constexpr (Plan::compiles) {
    detail::check_operands<Plan>("shardwise::matmul_into", a, b, &c);
    const bool aliased = detail::blocks_overlap(c, a) || detail::blocks_overlap(c, b);
    if (detail::contiguous_block(c) && !aliased) return detail::run_matmul_into<Plan, OC>(c.data(), a, b);
    ShardedMatrix<Scalar, M, ShC, OC> result(c.groups(), c.rows(), c.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(result, a, b);
    c.local() = result.local();
  }
}

/// C = alpha * A * B + beta * C: BLAS's GEMM contract (and PDGEMM's) on sharded matrices. The
/// product is planned as matmul_into plans it, with C's sharding as the requested output; alpha
/// and beta are applied to each rank's block of the finished product, after every reduction, so
/// beta * C enters once whatever the plan reduces (a Partial C too, by linearity). With beta zero
/// C is not read: NaN or Inf in it do not propagate. Alpha zero still runs the product (every
/// rank takes part in the schedule), so NaN or Inf in A or B do propagate, unlike reference BLAS.
/// C may be A or B (the same object): the product then goes through a temporary. A and B may
/// be views (shardwise/view.hpp).
template <typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB, typename WB,
          typename ShC, int OC, detail::MatmulVariant Variant = variant::Standard>
void gemm(std::type_identity_t<Scalar> alpha, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
          const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, std::type_identity_t<Scalar> beta,
          ShardedMatrix<Scalar, M, ShC, OC>& c, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>) {
    detail::redistributed_gemm<Variant>("shardwise::gemm", alpha, a, b, beta, c);
  } else if constexpr (Plan::compiles) {
    detail::check_operands<Plan>("shardwise::gemm", a, b, &c);
    const bool aliased = detail::blocks_overlap(c, a) || detail::blocks_overlap(c, b);
    if (!aliased) return detail::run_matmul<Plan>(c, a, b, alpha, beta);
    ShardedMatrix<Scalar, M, ShC, OC> product(c.groups(), c.rows(), c.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(product, a, b);
    detail::scale_add_into(c.local().data(), product.local().data(), product.local().size(), alpha, beta);
  }
}

/// The same into a writable view C of the caller's memory (taken by value, as a view is a
/// handle; shardwise/view.hpp), as ScaLAPACK's users hold C: straight into that memory when C's
/// block is contiguous in its storage order and not A's or B's, otherwise through an owning
/// product combined into C's strides element by element (beta = 0 never reads C).
template <typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB, typename WB,
          typename ShC, int OC, detail::MatmulVariant Variant = variant::Standard>
void gemm(std::type_identity_t<Scalar> alpha, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
          const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, std::type_identity_t<Scalar> beta,
          ShardedMatrix<Scalar, M, ShC, OC, View> c, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>) {
    detail::redistributed_gemm<Variant>("shardwise::gemm", alpha, a, b, beta, c);
  } else if constexpr (Plan::compiles) {
    detail::check_operands<Plan>("shardwise::gemm", a, b, &c);
    const bool aliased = detail::blocks_overlap(c, a) || detail::blocks_overlap(c, b);
    if (detail::contiguous_block(c) && !aliased) return detail::run_matmul_into<Plan, OC>(c.data(), a, b, alpha, beta);
    ShardedMatrix<Scalar, M, ShC, OC> product(c.groups(), c.rows(), c.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(product, a, b);
    auto into = c.local();
    const auto from = product.local();
    if (beta == Scalar(0)) into = alpha * from;
    else into = alpha * from + beta * into;
  }
}

namespace detail {

/// A ShardedMatrix, owning or a view.
template <typename T>
inline constexpr bool is_sharded_matrix_v = is_matrix_type_v<T>;

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
                "C = A * B and takes no alpha or beta: sw::gemm(alpha, A, B, beta, C) computes "
                "C = alpha * A * B + beta * C");
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

namespace detail {
/// A, B and C of one gemm: sharded matrices of one scalar type on one Mesh.
template <typename A, typename B, typename C>
concept gemm_operands = is_sharded_matrix_v<A> && is_sharded_matrix_v<B> && is_sharded_matrix_v<C> &&
                        std::is_same_v<typename A::scalar_type, typename B::scalar_type> &&
                        std::is_same_v<typename A::scalar_type, typename C::scalar_type> &&
                        std::is_same_v<typename A::mesh_type, typename B::mesh_type> &&
                        std::is_same_v<typename A::mesh_type, typename C::mesh_type>;
}  // namespace detail

/// Operands that do not make a gemm: the static_assert that says so, at the call.
template <typename Alpha, typename A, typename B, typename Beta, typename C, typename... Variant>
  requires(!detail::gemm_operands<A, B, C>)
void gemm(const Alpha&, const A&, const B&, const Beta&, C&, Variant...) {
  static_assert(detail::gemm_operands<A, B, C>,
                "shardwise::gemm(alpha, A, B, beta, C): A, B and C must be shardwise::ShardedMatrix objects of one "
                "scalar type on one Mesh (alpha and beta convert to that type); an Eigen matrix becomes one with "
                "ShardedMatrix<Scalar, Mesh, Sharding>::distribute(groups, matrix), another scalar type with a "
                ".cast<Scalar>() of it");
}

namespace detail {
/// Alpha and beta of a gemm on arrays of type A: both convert to A's scalar type.
template <typename Alpha, typename Beta, typename A>
concept gemm_scalars = std::is_convertible_v<const Alpha&, typename A::scalar_type> &&
                       std::is_convertible_v<const Beta&, typename A::scalar_type>;
/// C of a gemm or matmul_into that cannot be written: a read-only view.
template <typename C>
concept read_only_output = std::is_same_v<typename std::remove_cvref_t<C>::ownership, ConstView>;
}  // namespace detail

/// Alpha or beta that does not convert to the arrays' scalar type (a complex alpha for real
/// arrays), or a C that is a read-only view: the static_assert that says so, at the call.
template <typename Alpha, typename A, typename B, typename Beta, typename C, typename... Variant>
  requires(detail::gemm_operands<A, B, std::remove_cvref_t<C>> &&
           (!detail::gemm_scalars<Alpha, Beta, A> || detail::read_only_output<C>))
void gemm(const Alpha&, const A&, const B&, const Beta&, C&&, Variant...) {
  static_assert(detail::gemm_scalars<Alpha, Beta, A>,
                "shardwise::gemm(alpha, A, B, beta, C): alpha and beta must convert to the arrays' scalar type (a "
                "complex alpha or beta needs complex arrays); convert the scalars, or the arrays with a "
                ".cast<Scalar>() of their global matrices");
  static_assert(!detail::read_only_output<C>,
                "shardwise::gemm(alpha, A, B, beta, C): C is a read-only view (ConstView: a view of const memory); "
                "make C's view from a pointer to non-const memory, or give an owning matrix");
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
