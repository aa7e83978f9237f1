// shardwise/plan/planned_matmul.hpp: a planner's choice as types. planned_matmul<M, choice>
// turns a constexpr MatmulChoice (plan_matmul's answer, with static storage) into the shardings
// to store A, B and C in and the variant to pass to matmul.
#pragma once

#include <cstddef>
#include <utility>

#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/policy.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

/// The variant type of a choice, for planned_matmul.
namespace detail {
template <MeshType M, const MatmulChoice& C, VariantKind K = C.variant>
struct planned_inner_variant {
  using type = variant::Standard;
};
template <MeshType M, const MatmulChoice& C>
struct planned_inner_variant<M, C, VariantKind::ring> {
  using type = variant::Ring;
};
template <MeshType M, const MatmulChoice& C>
struct planned_inner_variant<M, C, VariantKind::summa> {
  using type = variant::Summa<planner_panel_width>;
};
template <MeshType M, const axis_list& Layers, typename Positions>
struct layer_variant;
template <MeshType M, const axis_list& Layers, std::size_t... I>
struct layer_variant<M, Layers, std::index_sequence<I...>> {
  using type = variant::Summa25DPanels<planner_panel_width,
                                       M::template axis_type<static_cast<std::size_t>(Layers[I])>::fixed_name...>;
};
template <MeshType M, const MatmulChoice& C>
struct planned_inner_variant<M, C, VariantKind::summa_25d> {
  static constexpr axis_list layers = C.layers;
  using type = typename layer_variant<M, layers, std::make_index_sequence<layers.size()>>::type;
};
}  // namespace detail

/// A planner's choice (a constexpr MatmulChoice with static storage) as types: the shardings to
/// store A, B and C in, and the variant to pass to matmul:
///   auto c = sw::matmul<P::c_sharding>(a, b, P::variant{});   // a, b sharded as P::a_sharding, P::b_sharding
template <MeshType M, const MatmulChoice& Choice>
struct planned_matmul {
  static_assert(Choice.found, "shardwise::planned_matmul: the planner found no plan that fits the budget");
  /// The choice's shardings as values: A, B and C as stored, A and B as the product runs on them.
  ///@{
  static constexpr detail::tensor_axes a_axes = Choice.a, b_axes = Choice.b, c_axes = Choice.c;
  static constexpr detail::tensor_axes kernel_a_axes = Choice.kernel_a, kernel_b_axes = Choice.kernel_b;
  ///@}
  /// The TensorShardings to store A, B and C in.
  ///@{
  using a_sharding = sharding_of_t<M, a_axes>;
  using b_sharding = sharding_of_t<M, b_axes>;
  using c_sharding = sharding_of_t<M, c_axes>;
  ///@}
  /// The variant to pass to matmul: variant::Via the kernel layouts, with the chosen inner variant.
  using variant = variant::Via<sharding_of_t<M, kernel_a_axes>, sharding_of_t<M, kernel_b_axes>,
                               typename detail::planned_inner_variant<M, Choice>::type>;
  /// The matmul_plan of that call.
  using plan = matmul_plan<M, a_sharding, b_sharding, c_sharding, variant>;
};

}  // namespace shardwise
