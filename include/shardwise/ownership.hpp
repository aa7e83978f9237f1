// shardwise/ownership.hpp: whether a DistributedArray owns its block.
//
// The third of an array's choices, after its sharding and its layout policy
// (layout_policy.hpp): Owning (the array allocates its block: distribute, from_local and every
// result), View or ConstView (memory the caller keeps; shardwise/view.hpp makes them). Pure
// compile-time: no MPI, no Eigen.
#pragma once

namespace shardwise {

/// Ownership of an array's block: the array allocates and frees it (the default).
struct Owning {};

namespace detail {
/// Ownership of an array's block: memory the caller keeps, writable through the array or not.
template <bool Const>
struct view_ownership {};
}  // namespace detail

/// Ownership: a view of memory the caller keeps and may write through (shardwise/view.hpp).
using View = detail::view_ownership<false>;
/// Ownership: a read-only view of memory the caller keeps (shardwise/view.hpp).
using ConstView = detail::view_ownership<true>;

namespace detail {
template <typename T>
inline constexpr bool is_view_ownership_v = false;
template <bool Const>
inline constexpr bool is_view_ownership_v<view_ownership<Const>> = true;
}  // namespace detail

}  // namespace shardwise
