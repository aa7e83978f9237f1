// shardwise/einsum.hpp: two-operand contractions of sharded tensors, planned at compile time.
//
//   auto h  = sw::einsum<"bsm,mh->bsh">(x, w);                     // natural output sharding
//   auto s  = sw::einsum<"bhqd,bhkd->bhqk">(q, k);                 // batch b, h; contract d
//   auto y  = sw::einsum<"bsh,hm->bsm", TS<S<"dp">, R, R>>(h, w2); // a requested output
//   auto yp = sw::einsum<"bsh,hm->bsm", TS<S<"dp">, R, R, P<"tp">>>(h, w2);  // keep the sum pending
//   auto yr = sw::reduce(yp);                                      // ... finish it later
//   sw::einsum<"mk,kn->mn">(a, b, sw::ring);                       // a variant, per call
//
// einsum_plan (plan/einsum_plan.hpp) classifies every index letter as batch, free or
// contracted, picks the policy family and writes the schedule from the shardings of A and B;
// the program (plan/program.hpp) puts each operand in the order its GEMM needs (at most one
// permutation copy each, counted in the footprint); the one executor (kernels/executor.hpp)
// runs it as batched GEMMs and collectives. A matmul is the einsum "mk,kn->mn".
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/detail/type_fingerprint.hpp"
#include "shardwise/plan/einsum_plan.hpp"
#include "shardwise/plan/policy.hpp"
#include "shardwise/sharded_tensor.hpp"

namespace shardwise {

namespace detail {

/// The name of the call's type fingerprint in the message of a failed agreement.
inline constexpr fixed_string call_types_name =
    "the call's types (a fingerprint of the scalar, mesh, shardings, layouts and variant: every rank must call with "
    "the same types)";

/// The names of the values an einsum's ranks agree on: "extent 0 of A"..., then the fingerprint.
template <std::size_t RankA, std::size_t RankB>
inline constexpr auto einsum_extent_names =
    join_names(join_names(repeated_name<RankA, "extent # of A">, repeated_name<RankB, "extent # of B">),
               call_types_name);

/// The checks of an einsum named `operation`: one agreement (agree_on_operands) on the operands'
/// usability and groups, their extents and the call's types (`Call` and the operands' types),
/// `names` naming those values (`roles` the operands); then the extents must give each index
/// letter one extent. Returns the extents of every letter.
template <typename Call, typename A, typename B>
IndexExtents check_einsum_operands(const char* operation, const contraction_indices& ix, const A& a, const B& b,
                                   std::string_view names = einsum_extent_names<A::rank, B::rank>.view(),
                                   const char* role_a = "A", const char* role_b = "B",
                                   std::string_view what = "the extents of A and B") {
  const OperandFacts facts[] = {a.facts(role_a), b.facts(role_b)};
  std::array<std::int64_t, 2 * max_tensor_rank + 1> all{};
  for (std::size_t d = 0; d < A::rank; ++d) all[d] = a.extent(d);
  for (std::size_t d = 0; d < B::rank; ++d) all[A::rank + d] = b.extent(d);
  all[A::rank + B::rank] = type_fingerprint<Call, A, B>;
  agree_on_operands(facts, std::span<const std::int64_t>(all.data(), A::rank + B::rank + 1), {}, operation,
                    what, names, constructed_locally);
  IndexExtents extents;
  for (std::size_t d = 0; d < A::rank; ++d) extents.set(ix.letter(Operand::A, static_cast<int>(d)), a.extent(d));
  for (std::size_t d = 0; d < B::rank; ++d) {
    const char l = ix.letter(Operand::B, static_cast<int>(d));
    const int da = ix.dim_of(Operand::A, l);
    if (da >= 0 && a.extent(static_cast<std::size_t>(da)) != b.extent(d))
      fail({operation, ": index ", std::string_view(&l, 1), " has extent ", a.extent(static_cast<std::size_t>(da)),
            " in ", role_a, " ", extents_text(a.extents()), " but ", b.extent(d), " in ", role_b, " ",
            extents_text(b.extents())});
    extents.set(l, b.extent(d));
  }
  return extents;
}

/// A program lowered again for operands stored in OA and OB (a permuted view's order): the
/// same steps, with the packs those orders need.
template <const program& P, dim_order OA, dim_order OB>
inline constexpr program relowered = lower(P.steps, P.start, P.indices, P.panel_width, OA, OB, {}, P.output_order);

/// The program P (a plan's, for row-major blocks) for operands of types A and B: P itself, or
/// P lowered again for a permuted view's storage order.
template <const program& P, typename A, typename B>
constexpr const program& einsum_program() {
  if constexpr (A::storage == P.initial_order[0] && B::storage == P.initial_order[1])
    return P;
  else
    return relowered<P, A::storage, B::storage>;
}

}  // namespace detail

namespace detail {

/// The body of einsum, for an operation named `operation` whose operands are called `role_a`
/// and `role_b` and whose agreed values `names` names (see check_einsum_operands): dot is one.
template <fixed_string Spec, typename ShC, typename Variant, typename Scalar, MeshType M, typename ShA, typename LA,
          typename WA, typename ShB, typename LB, typename WB>
auto run_einsum(const char* operation, const DistributedArray<Scalar, M, ShA, LA, WA>& a,
                const DistributedArray<Scalar, M, ShB, LB, WB>& b,
                std::string_view names = einsum_extent_names<DistributedArray<Scalar, M, ShA, LA, WA>::rank,
                                                             DistributedArray<Scalar, M, ShB, LB, WB>::rank>.view(),
                const char* role_a = "A", const char* role_b = "B", std::string_view what = "the extents of A and B") {
  using Plan = einsum_plan<Spec, M, ShA, ShB, ShC, Variant>;
  using Result = ShardedTensor<Scalar, M, typename Plan::output_sharding>;
  const IndexExtents extents = check_einsum_operands<Plan>(operation, Plan::indices, a, b, names, role_a, role_b, what);
  typename Result::extents_type c_extents{};
  for (std::size_t d = 0; d < Result::rank; ++d) c_extents[d] = extents[Plan::indices.letter(Operand::C, static_cast<int>(d))];
  Result c(a.groups(), c_extents, uninitialized);
  using A = DistributedArray<Scalar, M, ShA, LA, WA>;
  using B = DistributedArray<Scalar, M, ShB, LB, WB>;
  const operation_io<Scalar> io{.a = a.data(), .b = b.data(), .out = c.data(),
                                .strides = {block_strides(a), block_strides(b), nullptr}};
  // A plan that slices an input has a gathering alternative: the one that sends fewer bytes
  // for these extents runs (the same choice on every rank: the extents were agreed first).
  if constexpr (Plan::has_alternative) {
    if (Plan::uses_alternative(a.groups().mesh(), extents, static_cast<std::int64_t>(sizeof(Scalar)))) {
      execute<einsum_program<Plan::alternative_program, A, B>(), Scalar>(
          a.groups().state("einsum"), operand_extents_of(Plan::indices, extents), io);
      return c;
    }
  }
  execute<einsum_program<Plan::program, A, B>(), Scalar>(a.groups().state("einsum"),
                                                         operand_extents_of(Plan::indices, extents), io);
  return c;
}

}  // namespace detail

/// C = einsum<Spec>(A, B): Spec names the indices ("bsm,mh->bsh"); ShC is NaturalOutput or a
/// requested TensorSharding for C; Variant is standard, ring or summa. Collective. A and B are
/// any arrays (tensors, matrices, views: shardwise/view.hpp's sw::view, sw::permuted,
/// sw::transposed); C is an owning ShardedTensor.
template <fixed_string Spec, typename ShC = NaturalOutput, typename Scalar, MeshType M, typename ShA, typename LA,
          typename WA, typename ShB, typename LB, typename WB, typename Variant = variant::Standard>
  requires detail::ContractionVariant<Variant>
auto einsum(const DistributedArray<Scalar, M, ShA, LA, WA>& a, const DistributedArray<Scalar, M, ShB, LB, WB>& b,
            Variant = {}) {
  return detail::run_einsum<Spec, ShC, Variant>("shardwise::einsum", a, b);
}

namespace detail {

/// What a call to einsum with operands of these types got wrong, as a static_assert each.
template <typename A, typename B, typename... Variant>
struct einsum_misuse {
  static_assert(is_distributed_array_v<A> && is_distributed_array_v<B>,
                "shardwise::einsum: A and B must both be shardwise::ShardedTensor objects (or other arrays of the "
                "library: a ShardedMatrix, a view); a global Eigen::Tensor becomes one with "
                "ShardedTensor<Scalar, Mesh, Sharding>::distribute(groups, tensor)");
  static constexpr bool both = is_distributed_array_v<A> && is_distributed_array_v<B>;
  static_assert(!both || std::is_same_v<typename A::scalar_type, typename B::scalar_type>,
                "shardwise::einsum: A and B have different scalar types (float and double); convert one");
  static_assert(!both || std::is_same_v<typename A::mesh_type, typename B::mesh_type>,
                "shardwise::einsum: A and B are sharded over different Mesh types; build both on the same "
                "ProcessGroupMesh<Mesh<...>>");
  static_assert(sizeof...(Variant) <= 1 && (ContractionVariant<Variant> && ...),
                "shardwise::einsum: the third argument must be a variant: sw::standard, sw::ring or sw::summa");
  static constexpr bool explained = [] {
    if constexpr (!both) return true;
    else
      return !std::is_same_v<typename A::scalar_type, typename B::scalar_type> ||
             !std::is_same_v<typename A::mesh_type, typename B::mesh_type> ||
             !(sizeof...(Variant) <= 1 && (ContractionVariant<Variant> && ...));
  }();
};

struct invalid_einsum {};

}  // namespace detail

/// Anything else: the static_assert that names the mistake, reported at the call.
template <fixed_string Spec, typename ShC = NaturalOutput, typename A, typename B, typename... Variant>
auto einsum(const A&, const B&, Variant...) {
  static_assert(detail::einsum_misuse<A, B, Variant...>::explained,
                "shardwise::einsum: these arguments do not make an einsum; see shardwise/einsum.hpp for its forms");
  return detail::invalid_einsum{};
}

}  // namespace shardwise
