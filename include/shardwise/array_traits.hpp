// shardwise/array_traits.hpp: the distributed array type, declared, with the tags of its
// constructors and the traits that recognize it.
//
// The operations (matmul, einsum, reshard, view, the ScaLAPACK descriptors) ask what an
// argument is (an array at all, a matrix, a tensor, a view) before they need the class; the
// class itself is in distributed_array.hpp. Pure compile-time: no MPI, no Eigen.
#pragma once

#include "shardwise/layout.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/ownership.hpp"

namespace shardwise {

template <typename Scalar, MeshType M, typename Sh, typename Layout, typename Ownership = Owning>
class DistributedArray;

namespace detail {

/// Tag: allocate without initializing.
struct uninitialized_t {};
inline constexpr uninitialized_t uninitialized{};
/// Tag: a view made from an array that was already checked (no check, no communication). A
/// view of an unusable array (moved from, released) is unusable as well (`moved`,
/// `released`): the next collective operation reports it on every rank.
struct view_unchecked_t {
  bool moved = false;
  bool released = false;
};

template <typename T>
inline constexpr bool is_distributed_array_v = false;
template <typename Scalar, MeshType M, typename Sh, typename Layout, typename W>
inline constexpr bool is_distributed_array_v<DistributedArray<Scalar, M, Sh, Layout, W>> = true;

template <typename T, array_face Face>
inline constexpr bool has_face_v = false;
template <typename Scalar, MeshType M, typename Sh, typename Layout, typename W, array_face Face>
inline constexpr bool has_face_v<DistributedArray<Scalar, M, Sh, Layout, W>, Face> = Layout::face == Face;

/// A ShardedMatrix (owning or a view).
template <typename T>
inline constexpr bool is_matrix_type_v = has_face_v<T, array_face::matrix>;
/// A ShardedTensor (owning or a view, any storage order).
template <typename T>
inline constexpr bool is_tensor_type_v = has_face_v<T, array_face::tensor>;

/// Where this rank's block of an array lies for the executor, and its element strides: null
/// for an owning block (contiguous in its storage order), the view's own otherwise.
template <typename X>
const tensor_extents* block_strides(const X& x) {
  if constexpr (is_view_ownership_v<typename X::ownership>) return &x.local_strides();
  else return nullptr;
}

}  // namespace detail

}  // namespace shardwise
