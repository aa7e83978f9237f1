// shardwise/tensor_view.hpp: N-D tensors over memory the caller keeps, and permuted views.
//
//   using X = sw::ShardedTensor<double, Grid, sw::TensorSharding<sw::Split<"x">, R, R>>;
//   auto x  = sw::view<X>(groups, {b, s, m}, buffer.data(), {s * ld, ld, 1});   // rows padded to ld
//   auto xt = sw::permuted<0, 2, 1>(x);                                        // [b, m, s], no copy
//   auto y  = sw::einsum<"bms,sh->bmh">(xt, w);                                // an owning result
//
// The N-D counterpart of shardwise/view.hpp (read it first: ownership, lifetime and cost are
// the same). A tensor view is a ShardedTensor whose ownership is View or ConstView: this
// rank's block at a pointer, element (i0, i1, ...) at data[i0 * strides[0] + i1 * strides[1]
// + ...]. Its storage order (which dimension is outermost, ... innermost) is part of its type,
// row-major for sw::view and permuted for sw::permuted, because the planner plans the packs
// for it; strides that do not nest in that order still work, through a pack.
//
// permuted<P...>(t): dimension i of the result is dimension P[i] of t; extents, sharding
// (dimension by dimension; a Partial stays), strides and storage order follow, no data moves.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharded_tensor.hpp"
#include "shardwise/sharding.hpp"
#include "shardwise/view.hpp"

namespace shardwise {

/// A tensor distributed over the mesh M as Sh says, whose block this rank's caller keeps: the
/// view form of ShardedTensor (see the top of this file). Copying a view copies the pointer.
template <typename Scalar, MeshType M, typename Sh, bool Const, detail::dim_order Order>
class ShardedTensor<Scalar, M, Sh, detail::view_ownership<Const, Order>> {
  using owning = ShardedTensor<Scalar, M, Sh, Owning>;

 public:
  using scalar_type = Scalar;
  using mesh_type = M;
  using sharding = Sh;
  using ownership = detail::view_ownership<Const, Order>;
  static constexpr std::size_t rank = owning::rank;
  using extents_type = typename owning::extents_type;
  using global_tensor = typename owning::global_tensor;
  /// The element type as the view sees it: const for a ConstView.
  using element_type = std::conditional_t<Const, const Scalar, Scalar>;
  static constexpr std::string_view extent_names = owning::extent_names;
  /// The storage order the planner plans for: row-major unless the view was permuted.
  static constexpr detail::dim_order storage = Order.rank == 0 ? owning::storage : Order;
  static constexpr detail::tensor_axes axes = owning::axes;
  static_assert(storage.rank == static_cast<int>(rank),
                "shardwise::ShardedTensor view: the storage order has another number of dimensions than the sharding");

  /// Wraps this rank's block of a tensor of global `extents` at `data` with element `strides`.
  /// Collective: the extents are agreed on all ranks (sw::view is the usual way to call it).
  ShardedTensor(const ProcessGroupMesh<M>& groups, const extents_type& extents, element_type* data,
                const extents_type& strides)
      : ShardedTensor(groups, extents, data, strides, detail::view_unchecked_t{}) {
    (void)groups_.state("shardwise::view");
    LocalProblem problem;
    bool empty = false;
    for (std::size_t d = 0; d < rank; ++d) {
      if (extents[d] < 0) problem.set("the extents " + detail::extents_text(extents) + " have a negative one");
      if (strides[d] < 0) problem.set("the strides " + detail::extents_text(strides) + " have a negative one");
      empty = empty || local_[d] == 0;
    }
    if (!empty && data == nullptr) problem.set("the pointer is null but this rank's block is not empty");
    agree_on_all_ranks(groups.world(), extents, problem, "shardwise::view", "the global extents", extent_names);
  }

  /// No check and no communication: for views made from an array already checked (permuted).
  ShardedTensor(const ProcessGroupMesh<M>& groups, const extents_type& extents, element_type* data,
                const extents_type& strides, detail::view_unchecked_t)
      : groups_(groups), extents_(extents), data_(data) {
    if (!groups_) return;
    const detail::block_geometry& geo = groups_.geometry();
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t e = extents[d] < 0 ? 0 : extents[d];
      local_[d] = geo.extent(e, axes.dim(static_cast<int>(d)));
      offsets_[d] = geo.offset(e, axes.dim(static_cast<int>(d)));
      strides_[d] = strides[d];
    }
  }

  /// Global extents.
  [[nodiscard]] const extents_type& extents() const noexcept { return extents_; }
  [[nodiscard]] std::int64_t extent(std::size_t d) const { return extents_.at(d); }
  /// This rank's block: its extents and where it starts in each dimension.
  [[nodiscard]] const extents_type& local_extents() const noexcept { return local_; }
  [[nodiscard]] const extents_type& offsets() const noexcept { return offsets_; }
  /// Element stride of dimension `d` of this rank's block.
  [[nodiscard]] std::int64_t stride(std::size_t d) const { return strides_.at(d); }
  /// The element strides of this rank's block, one per dimension (the rest 0).
  [[nodiscard]] const detail::tensor_extents& local_strides() const noexcept { return strides_; }
  /// This rank's block where the caller keeps it.
  [[nodiscard]] element_type* data() const noexcept { return data_; }

  /// The whole tensor on every rank (reduces a Partial, then gathers). Collective.
  [[nodiscard]] global_tensor to_global() const {
    agree("shardwise::ShardedTensor::to_global");
    Eigen::array<Eigen::Index, rank> dims{};
    detail::tensor_extents global_extents{};
    for (std::size_t d = 0; d < rank; ++d) {
      dims[d] = static_cast<Eigen::Index>(extents_[d]);
      global_extents[d] = extents_[d];
    }
    global_tensor global(dims);
    detail::execute<detail::reshard_program<M, Sh, replicated_sharding_t<rank>, storage, owning::storage>, Scalar>(
        groups_.state("to_global"), {{{}, {}, global_extents}},
        {.c = data_, .out = global.data(), .strides = {nullptr, nullptr, &strides_}});
    return global;
  }

  [[nodiscard]] const ProcessGroupMesh<M>& groups() const noexcept { return groups_; }
  [[nodiscard]] bool released() const noexcept { return false; }
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(groups_); }
  void check_valid(const char* operation, const char* role) const {
    if (!valid()) detail::throw_unusable(operation, role, "tensor", false);
  }
  /// Collective: every rank holds this tensor with the same global extents, else all throw.
  void agree(const char* operation, const char* role = "the tensor") const {
    check_valid(operation, role);
    agree_on_all_ranks(groups_.world(), extents_, {}, operation, "the global extents", extent_names,
                       detail::constructed_locally);
  }

 private:
  ProcessGroupMesh<M> groups_;
  extents_type extents_{}, local_{}, offsets_{};
  element_type* data_ = nullptr;
  detail::tensor_extents strides_{};
};

namespace detail {

template <typename T>
inline constexpr bool is_tensor_type_v = false;
template <typename Scalar, MeshType M, typename Sh, typename W>
inline constexpr bool is_tensor_type_v<ShardedTensor<Scalar, M, Sh, W>> = true;

template <typename Scalar, MeshType M, typename Sh, typename W, typename E>
struct view_type_of<ShardedTensor<Scalar, M, Sh, W>, E> {
  static_assert(std::is_same_v<std::remove_const_t<E>, Scalar>,
                "shardwise::view: the pointer's element type is not the array's scalar type; declare the "
                "ShardedTensor with the scalar type of the buffer");
  using type = ShardedTensor<Scalar, M, Sh, view_ownership<std::is_const_v<E>>>;
};

/// The storage order of a view permuted by P: the old order, each dimension renamed.
template <std::size_t... P>
constexpr dim_order permuted_order(const dim_order& order) {
  constexpr std::size_t p[] = {P...};
  std::array<std::int8_t, max_tensor_rank> renamed{};  // old dimension -> new
  for (std::size_t i = 0; i < sizeof...(P); ++i) renamed[p[i]] = static_cast<std::int8_t>(i);
  dim_order result;
  result.rank = order.rank;
  for (int i = 0; i < order.rank; ++i)
    result.outer_to_inner[static_cast<std::size_t>(i)] = renamed[static_cast<std::size_t>(order[i])];
  return result;
}

template <std::size_t N, std::size_t... P>
constexpr bool is_permutation() {
  if (sizeof...(P) != N) return false;
  std::array<bool, N> seen{};
  for (std::size_t p : {P...}) {
    if (p >= N || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

}  // namespace detail

/// A view of the caller's memory as this rank's block of a tensor of type A (a ShardedTensor
/// type, which gives the scalar type, mesh and sharding): global `extents`, element strides
/// `strides`; a const pointer gives a ConstView. Collective.
template <typename A, typename E, MeshType M>
  requires detail::is_tensor_type_v<A>
auto view(const ProcessGroupMesh<M>& groups, const typename A::extents_type& extents, E* data,
          const typename A::extents_type& strides) {
  static_assert(std::is_same_v<M, typename A::mesh_type>,
                "shardwise::view: the ProcessGroupMesh is over another Mesh than the tensor type; declare the "
                "ShardedTensor on the same Mesh<...> as the groups");
  using V = typename detail::view_type_of<A, E>::type;
  return V(groups, extents, data, strides);
}

/// The tensor with its dimensions reordered (dimension i of the result is dimension P[i] of
/// x), as a view of the same block: nothing copied, nothing communicated. Of an owning tensor,
/// a ConstView of its block (it must not outlive the tensor).
template <std::size_t... P, typename X>
auto permuted(const X& x) {
  static_assert(detail::is_tensor_type_v<X>,
                "shardwise::permuted<...>: the argument must be a shardwise::ShardedTensor (owning or a view); for "
                "a matrix, use shardwise::transposed");
  static_assert(detail::is_permutation<X::rank, P...>(),
                "shardwise::permuted<P...>: give each dimension of the tensor exactly once, e.g. permuted<0, 2, 1> "
                "for a tensor of 3 dimensions");
  using Sh = typename detail::permuted_sharding<typename X::sharding, P...>::type;
  constexpr detail::dim_order order = detail::permuted_order<P...>(X::storage);
  typename X::extents_type extents{}, strides{};
  constexpr std::size_t p[] = {P...};
  if constexpr (detail::is_view_ownership_v<typename X::ownership>) {
    for (std::size_t i = 0; i < X::rank; ++i) {
      extents[i] = x.extents()[p[i]];
      strides[i] = x.stride(p[i]);
    }
    using V = ShardedTensor<typename X::scalar_type, typename X::mesh_type, Sh,
                            detail::view_ownership<std::is_const_v<typename X::element_type>, order>>;
    return V(x.groups(), extents, x.data(), strides, detail::view_unchecked_t{});
  } else {
    x.check_valid("shardwise::permuted", "the tensor");
    const detail::tensor_extents contiguous = detail::strides_of(
        [&] {
          detail::tensor_extents e{};
          for (std::size_t d = 0; d < X::rank; ++d) e[d] = x.local_extents()[d];
          return e;
        }(),
        X::storage);
    for (std::size_t i = 0; i < X::rank; ++i) {
      extents[i] = x.extents()[p[i]];
      strides[i] = contiguous[p[i]];
    }
    using V = ShardedTensor<typename X::scalar_type, typename X::mesh_type, Sh, detail::view_ownership<true, order>>;
    return V(x.groups(), extents, x.local().data(), strides, detail::view_unchecked_t{});
  }
}
/// A permuted view of a temporary would dangle: keep the tensor in a variable first.
template <std::size_t... P, typename Scalar, MeshType M, typename Sh>
void permuted(ShardedTensor<Scalar, M, Sh, Owning>&&) = delete;

}  // namespace shardwise
