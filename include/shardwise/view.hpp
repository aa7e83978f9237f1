// shardwise/view.hpp: distributed arrays over memory the caller keeps, and transposed and
// permuted views.
//
//   // Each rank already holds its block of A in a column-major buffer with a leading dimension
//   // lld >= local rows (a ScaLAPACK local array, a user's std::vector):
//   using A_t = sw::ShardedMatrix<double, Grid, ShA, Eigen::ColMajor>;
//   auto a  = sw::view<A_t>(groups, {m, k}, buffer.data(), {1, lld}, {m_local, k_local});  // no copy
//   auto b  = sw::view<B_t>(groups, {k, n}, eigen_map);                  // an Eigen::Map, Ref or Matrix
//   auto c  = sw::matmul(a, b);                                           // an owning result
//   auto d  = sw::matmul(sw::transposed(c), b2);                          // Cᵀ B2, nothing copied to transpose
//   auto x  = sw::view<X_t>(groups, {b, s, m}, data, {s * ld, ld, 1}, local);  // a tensor, rows padded to ld
//   auto xt = sw::permuted<0, 2, 1>(x);                                   // [b, m, s], no copy
//
// The block a rank holds is the one the sharding gives it: sw::local_extents_of<A_t>(groups,
// {m, k}) and sw::local_offsets_of say which (Split<...>: part i of n over p parts starts at
// floor(i n / p): the extra elements are spread over the later parts; SplitFirstLarger<...>: the
// first n mod p parts one larger, PETSc's blocks), and the view checks the caller's local extents
// against it on every rank.
//
// A view is a DistributedArray (shardwise/distributed_array.hpp) whose ownership is View
// (writable) or ConstView: the same global extents, sharding, layout and groups as the owning
// form, and this rank's block at a pointer with element strides, one per dimension. Making one
// is collective: every rank checks its block against the sharding and the global extents are
// agreed on all ranks (comm/consistency.hpp), as for from_local.
//
// Lifetime: a view does not own its block. The memory must stay valid, and must not be
// written by anyone else, while the view or an operation on it is in use; the result of an
// operation is an owning array and does not refer to the view. sw::transposed and sw::permuted
// of an owning array are views of that array's block (so they must not outlive it; they cannot
// be taken of a temporary).
//
// Cost: the executor reads a view's block where it lies whenever the step can: a local GEMM
// reads a matrix with one unit stride through its leading dimension, in either order. Where a
// step needs contiguous data (the send buffer of a collective) it packs the block into its
// workspace, as the program's packs of an owning operand in another order do. The layout's
// storage order is what the planner plans for: give the order the strides have (column-major
// for a unit row stride), or the GEMM packs the block first.
//
// permuted<P...>(a): dimension i of the result is dimension P[i] of a; the extents, the
// sharding (dimension by dimension; a Partial stays), the strides and the storage order follow,
// so the planner sees the permuted sharding, and no data moves. transposed(a) is permuted<1, 0>.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/distributed_array.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharded_matrix.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

// TensorSharding `T` with the Partial among `Params` (if any) appended. Hidden from Doxygen,
// which takes the recursion for a recursive class relation and warns.
/// @cond
template <typename T, typename... Params>
struct append_partial {
  using type = T;
};
template <typename... D, typename First, typename... Rest>
struct append_partial<TensorSharding<D...>, First, Rest...>
    : append_partial<std::conditional_t<is_partial_v<First>, TensorSharding<D..., First>, TensorSharding<D...>>,
                     Rest...> {};
/// @endcond

/// The sharding of a permuted view: dimension i is dimension P[i] of Sh; a Partial stays.
template <typename Sh, std::size_t... P>
struct permuted_sharding;
template <typename... Params, std::size_t... P>
struct permuted_sharding<TensorSharding<Params...>, P...>
    : append_partial<TensorSharding<typename TensorSharding<Params...>::template dim<P>...>, Params...> {};

/// A matrix sharding with its two dimensions swapped.
template <typename Sh>
using transposed_sharding = permuted_sharding<Sh, 1, 0>;

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

/// The layout of a view permuted by P of an array of layout L and `Rank` dimensions.
template <typename L, std::size_t Rank, std::size_t... P>
struct permuted_layout;
template <int Order, std::size_t... P>
struct permuted_layout<MatrixLayout<Order>, 2, P...> {
  static constexpr bool swapped = permuted_order<P...>(dim_order::row_major(2)) != dim_order::row_major(2);
  using type = MatrixLayout<swapped ? (Order == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor) : Order>;
};
template <dim_order Order, std::size_t Rank, std::size_t... P>
struct permuted_layout<TensorLayout<Order>, Rank, P...> {
  static constexpr dim_order order = permuted_order<P...>(TensorLayout<Order>::template order<Rank>);
  // Row-major is spelled TensorLayout<> whatever the path to it, so that equal layouts are one type.
  using type = std::conditional_t<order == dim_order::row_major(static_cast<int>(Rank)), TensorLayout<>,
                                  TensorLayout<order>>;
};
template <int Order, std::size_t Rank, std::size_t... P>
struct permuted_layout<SequenceMajor<Order>, Rank, P...> {
  static_assert(dependent_false<permuted_layout>,
                "shardwise::permuted: an activation (SequenceMajor) is stored as a matrix of tokens and cannot be "
                "permuted as a view; reshard it or copy it into a ShardedTensor");
  using type = SequenceMajor<Order>;
};

/// This rank's block of an array of type A and global `extents`: its extents and offsets.
template <typename A, MeshType M>
std::pair<typename A::extents_type, typename A::extents_type> block_of(const ProcessGroupMesh<M>& groups,
                                                                       const typename A::extents_type& extents) {
  static_assert(std::is_same_v<M, typename A::mesh_type>,
                "shardwise::local_extents_of: the ProcessGroupMesh is over another Mesh than the array type");
  std::pair<typename A::extents_type, typename A::extents_type> block{};
  tensor_extents strides{};
  place_array(static_cast<int>(A::rank), extents.data(), A::axes, A::cycles, groups.geometry(), nullptr,
              block.first.data(), block.second.data(), strides, "shardwise::local_extents_of");
  return block;
}

/// The view type of array type A over elements E (const or not).
template <typename A, typename E>
struct view_type_of;
template <typename Scalar, MeshType M, typename Sh, typename L, typename W, typename E>
struct view_type_of<DistributedArray<Scalar, M, Sh, L, W>, E> {
  static_assert(std::is_same_v<std::remove_const_t<E>, Scalar>,
                "shardwise::view: the pointer's element type is not the array's scalar type; declare the array "
                "with the scalar type of the buffer");
  using type = DistributedArray<Scalar, M, Sh, L, view_ownership<std::is_const_v<E>>>;
};

}  // namespace detail

/// A view of the caller's memory as this rank's block of an array of type A (an array type,
/// which gives the scalar type, mesh, sharding and layout): global `extents`, this rank's
/// element (i0, i1, ...) at data[i0 * strides[0] + i1 * strides[1] + ...], and `local_extents`
/// the extents of the block the caller holds there, which must be the block the sharding gives
/// this rank (sw::local_extents_of<A>(groups, extents) says which); a const pointer gives a
/// ConstView. Collective (see the top of this file): a block of other extents, strides under
/// which two elements share an address (a leading dimension below the block's rows), or a
/// writable view with stride 0 along more than one element is the same error on every rank.
template <typename A, typename E, MeshType M>
  requires detail::is_distributed_array_v<A>
auto view(const ProcessGroupMesh<M>& groups, const typename A::extents_type& extents, E* data,
          const typename A::extents_type& strides, const typename A::extents_type& local_extents) {
  static_assert(std::is_same_v<M, typename A::mesh_type>,
                "shardwise::view: the ProcessGroupMesh is over another Mesh than the array type; declare the "
                "array on the same Mesh<...> as the groups");
  using V = typename detail::view_type_of<A, E>::type;
  return V(groups, extents, data, strides, local_extents);
}

/// Extents, strides or local extents of another number of dimensions than the array type has:
/// the static_assert that says so, at the call (instead of a failed overload resolution).
template <typename A, typename E, MeshType M, std::size_t N1, std::size_t N2, std::size_t N3>
  requires(detail::is_distributed_array_v<A> && (N1 != A::rank || N2 != A::rank || N3 != A::rank))
auto view(const ProcessGroupMesh<M>&, const std::int64_t (&)[N1], E*, const std::int64_t (&)[N2],
          const std::int64_t (&)[N3]) {
  static_assert(N1 == A::rank && N2 == A::rank && N3 == A::rank,
                "shardwise::view<A>(groups, extents, data, strides, local_extents): give as many extents, strides "
                "and local extents as the array type A has dimensions (a matrix: two each, e.g. {m, k}, {1, lld}, "
                "{local_rows, k})");
  return 0;
}

/// The same without the block's extents: the view cannot check that the caller's block follows
/// the sharding's partition (a block laid out by another rule is then silently read wrong).
template <typename A, typename E, MeshType M>
  requires detail::is_distributed_array_v<A>
[[deprecated("shardwise::view: give this rank's local extents as a fifth argument, "
             "sw::view<A>(groups, extents, data, strides, local_extents), so that a block laid out by another "
             "partition rule is an error instead of a wrong answer")]]
auto view(const ProcessGroupMesh<M>& groups, const typename A::extents_type& extents, E* data,
          const typename A::extents_type& strides) {
  static_assert(std::is_same_v<M, typename A::mesh_type>,
                "shardwise::view: the ProcessGroupMesh is over another Mesh than the array type; declare the "
                "array on the same Mesh<...> as the groups");
  using V = typename detail::view_type_of<A, E>::type;
  return V(groups, extents, data, strides);
}

/// A view of an Eigen matrix, Map or Ref that holds this rank's block of a matrix (its shape
/// must be the block's); the storage order is the Eigen object's, the strides its inner and
/// outer strides. Collective, like the form above.
template <typename A, typename Block, MeshType M>
  requires detail::is_matrix_type_v<A> &&
           requires(Block& d) { d.data(); d.outerStride(); d.innerStride(); std::remove_cvref_t<Block>::IsRowMajor; }
auto view(const ProcessGroupMesh<M>& groups, std::array<std::int64_t, 2> global_extents, Block&& block) {
  using Derived = std::remove_cvref_t<Block>;
  static_assert(std::is_lvalue_reference_v<Block> || !std::is_base_of_v<Eigen::PlainObjectBase<Derived>, Derived>,
                "shardwise::view: the Eigen matrix is a temporary, so the view would dangle; keep the matrix in a "
                "variable (or pass an Eigen::Map of memory that outlives the view)");
  static_assert(std::is_same_v<M, typename A::mesh_type>,
                "shardwise::view: the ProcessGroupMesh is over another Mesh than the array type; declare the "
                "ShardedMatrix on the same Mesh<...> as the groups");
  using E = std::remove_pointer_t<decltype(block.data())>;
  constexpr int order = Derived::IsRowMajor ? Eigen::RowMajor : Eigen::ColMajor;
  using Retyped = ShardedMatrix<typename A::scalar_type, typename A::mesh_type, typename A::sharding, order, Owning>;
  const std::int64_t outer = block.outerStride(), inner = block.innerStride();
  const std::array<std::int64_t, 2> strides = Derived::IsRowMajor ? std::array<std::int64_t, 2>{outer, inner}
                                                                  : std::array<std::int64_t, 2>{inner, outer};
  using V = typename detail::view_type_of<Retyped, E>::type;
  return V(groups, global_extents, block.data(), strides,
           {static_cast<std::int64_t>(block.rows()), static_cast<std::int64_t>(block.cols())}, "the Eigen block");
}

/// The extents of the block that array type A gives this rank of `groups` for global
/// `extents` (ScaLAPACK's NUMROC, per dimension): what a caller allocates before sw::view.
/// Local: no communication.
template <typename A, MeshType M>
  requires detail::is_distributed_array_v<A>
typename A::extents_type local_extents_of(const ProcessGroupMesh<M>& groups, const typename A::extents_type& extents) {
  return detail::block_of<A>(groups, extents).first;
}

/// Where that block starts: the global index of its first element in each dimension (for a
/// block-cyclic dimension, of its first local index: ScaLAPACK's INDXL2G of 0). Local.
template <typename A, MeshType M>
  requires detail::is_distributed_array_v<A>
typename A::extents_type local_offsets_of(const ProcessGroupMesh<M>& groups, const typename A::extents_type& extents) {
  return detail::block_of<A>(groups, extents).second;
}

/// The array with its dimensions reordered (dimension i of the result is dimension P[i] of
/// x), as a view of the same block: nothing copied, nothing communicated. Of an owning array, a
/// ConstView of its block (it must not outlive the array); of a view, a view of the same memory.
template <std::size_t... P, typename X>
  requires detail::is_distributed_array_v<X>
auto permuted(const X& x) {
  static_assert(detail::is_permutation<X::rank, P...>(),
                "shardwise::permuted<P...>: give each dimension of the array exactly once, e.g. permuted<0, 2, 1> "
                "for an array of 3 dimensions");
  if constexpr (!detail::is_permutation<X::rank, P...>()) {
    return x;
  } else {
    using Sh = typename detail::permuted_sharding<typename X::sharding, P...>::type;
    using L = typename detail::permuted_layout<typename X::layout_type, X::rank, P...>::type;
    constexpr bool is_const = !detail::is_view_ownership_v<typename X::ownership> ||
                              std::is_const_v<typename X::element_type>;
    using V = DistributedArray<typename X::scalar_type, typename X::mesh_type, Sh, L, detail::view_ownership<is_const>>;
    // Local: an unusable x (moved from, released) gives an unusable view, which the next
    // collective operation refuses on every rank (throwing here, on this rank only, would
    // leave the others waiting in that operation).
    typename V::extents_type extents{}, strides{};
    constexpr std::size_t p[] = {P...};
    for (std::size_t i = 0; i < X::rank; ++i) {
      extents[i] = x.extents()[p[i]];
      strides[i] = x.stride(p[i]);
    }
    return V(x.groups(), extents, const_cast<typename V::element_type*>(x.data()), strides,
             detail::view_unchecked_t{.moved = !x.valid() && !x.released(), .released = x.released()});
  }
}
/// A permuted view of a temporary would dangle: the static_assert that says so (a deleted
/// overload's "call to deleted function" would not say why).
template <std::size_t... P, typename Scalar, MeshType M, typename Sh, typename L>
auto permuted(DistributedArray<Scalar, M, Sh, L, Owning>&& x) {
  static_assert(detail::dependent_false<Sh>,
                "shardwise::permuted: the array is a temporary, so its view would dangle; keep the array in a "
                "variable first");
  return permuted<P...>(static_cast<const DistributedArray<Scalar, M, Sh, L, Owning>&>(x));
}

/// The transpose of a matrix (any array of two dimensions) as a view of the same block:
/// permuted<1, 0>, with the extents, sharding, storage order and strides swapped, nothing copied
/// and nothing communicated.
template <typename X>
auto transposed(const X& x) {
  static_assert(detail::is_distributed_array_v<X> && X::rank == 2,
                "shardwise::transposed: the argument must be a shardwise::ShardedMatrix (or another array of two "
                "dimensions; owning or a view); for an N-D tensor, use shardwise::permuted<...>");
  if constexpr (detail::is_distributed_array_v<X> && X::rank == 2) return permuted<1, 0>(x);
}
/// A transposed view of a temporary would dangle: the static_assert that says so.
template <typename Scalar, MeshType M, typename Sh, typename L>
auto transposed(DistributedArray<Scalar, M, Sh, L, Owning>&& x) {
  static_assert(detail::dependent_false<Sh>,
                "shardwise::transposed: the matrix is a temporary, so its view would dangle; keep the matrix in a "
                "variable first");
  return transposed(static_cast<const DistributedArray<Scalar, M, Sh, L, Owning>&>(x));
}

/// The conjugate transpose Aᴴ, BLAS's op 'C': for real scalars, transposed(a) (a view, nothing
/// copied). For complex scalars, an owning matrix with the transposed sharding and storage
/// order whose block is this rank's block conjugated: one local pass over the block, no
/// communication, and the product's plan is the one of transposed(a). Conjugation commutes
/// with every step a plan takes (gathers, slices, sums), so the result is exact.
template <typename X>
auto adjoint(const X& x) {
  static_assert(detail::is_matrix_type_v<X>,
                "shardwise::adjoint: the argument must be a shardwise::ShardedMatrix (owning or a view)");
  using Scalar = typename X::scalar_type;
  if constexpr (!detail::is_complex_v<Scalar>) {
    return transposed(x);
  } else {
    using Sh = typename detail::transposed_sharding<typename X::sharding>::type;
    constexpr int order = X::storage_order == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor;
    if (!x.groups()) x.check_valid("shardwise::adjoint", "the matrix");  // bound to no groups: nothing to agree over
    ShardedMatrix<Scalar, typename X::mesh_type, Sh, order> result(x.groups(), x.cols(), x.rows(), detail::uninitialized);
    if (!x.valid()) {
      // Local, like transposed: of an unusable matrix an unusable one (released or moved from as
      // x was), which the next collective operation refuses on every rank; throwing here would
      // be this rank's error alone while the others wait in that operation.
      if (x.released()) static_cast<void>(std::move(result).release());
      else static_cast<void>(decltype(result)(std::move(result)));
      return result;
    }
    // The adjoint of a block in one order, stored in the other: the same memory layout, conjugated.
    result.local().noalias() = x.local().adjoint();
    return result;
  }
}
/// The adjoint of a real temporary would be a dangling view: the static_assert that says so.
template <typename Scalar, MeshType M, typename Sh, typename L>
  requires(!detail::is_complex_v<Scalar>)
auto adjoint(DistributedArray<Scalar, M, Sh, L, Owning>&& x) {
  static_assert(detail::dependent_false<Sh>,
                "shardwise::adjoint: the real matrix is a temporary, and its adjoint is a view that would dangle; "
                "keep the matrix in a variable first");
  return adjoint(static_cast<const DistributedArray<Scalar, M, Sh, L, Owning>&>(x));
}

}  // namespace shardwise
