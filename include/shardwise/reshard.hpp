// shardwise/reshard.hpp: change an array's sharding, or finish its pending sum.
//
//   auto cs = sw::reshard<TensorSharding<Split<"x", "y">, Replicated>>(c);   // gather or scatter
//   auto cr = sw::reduce(cp);                    // Partial<axes> becomes the plain sharding
//
// reshard_plan (plan/reshard.hpp) decides the steps at compile time: keep a split, slice
// (replicated to split: local, no bytes), gather minor axes, ReduceScatter pending axes into a
// dimension, AllReduce the rest. Anything else would be a reshuffle and does not compile. The
// one executor runs the steps, for any array: a matrix, a tensor, an activation, a view.
#pragma once

#include <cstdint>
#include <type_traits>

#include "shardwise/traffic.hpp"

#include "shardwise/distributed_array.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

/// The layout of an owning array of layout kind L with sharding To: a matrix in Eigen's order
/// Order (-1: the one To gives), a row-major tensor, an activation in the order To gives (that
/// specialization is with the activations, in nn/sharded_activation.hpp).
template <typename L, typename To, int Order>
struct resharded_layout;
template <int From, typename To, int Order>
struct resharded_layout<MatrixLayout<From>, To, Order> {
  using type = MatrixLayout<Order == -1 ? default_storage_order<To>() : Order>;
};
template <dim_order From, typename To, int Order>
struct resharded_layout<TensorLayout<From>, To, Order> {
  using type = TensorLayout<>;
};
template <typename L, typename To, int Order = -1>
using resharded_layout_t = typename resharded_layout<L, To, Order>::type;

}  // namespace detail

/// The array with sharding To, as far as that needs no reshuffle: slice, gather minor axes,
/// reduce a Partial (AllReduce) or ReduceScatter it into a dimension. The result is owning, of
/// the same layout kind: a matrix in Eigen's order OrderTo (by default the one its sharding
/// gives, as for any ShardedMatrix), a row-major tensor, an activation. Collective.
template <TensorShardingType To, int OrderTo = -1, typename Scalar, MeshType M, typename From, typename L,
          typename W>
auto reshard(const DistributedArray<Scalar, M, From, L, W>& x) {
  static_assert(To::rank == From::rank, "shardwise::reshard: the target sharding has another number of dimensions "
                                        "than the array; a reshard keeps the array's shape");
  using Source = DistributedArray<Scalar, M, From, L, W>;
  using Result = DistributedArray<Scalar, M, To, detail::resharded_layout_t<L, To, OrderTo>>;
  x.agree("shardwise::reshard");
  Result result(x.groups(), x.extents(), detail::uninitialized);
  if constexpr (Source::redistributed || Result::redistributed) {
    // To or from a BlockCyclic or SplitFirstLarger sharding: a redistribution (kernels/redistribute.hpp), its bytes
    // reshard_traffic's.
    static_assert(!From::is_partial, "shardwise::reshard: a Partial array goes to a block-cyclic sharding after "
                                     "its sum: reduce() it first");
    auto& buffers = detail::redistribution_buffers<Scalar>();
    detail::redistribute<Scalar>(x.groups().state("reshard"), Source::own_placement(), Result::own_placement(),
                                 x.global_extents(), x.data(), x.local_strides(), result.data(),
                                 result.local_strides(), buffers.send, buffers.receive);
  } else {
    detail::execute<detail::reshard_program<M, From, To, Source::storage, Result::storage>, Scalar>(
        x.groups().state("reshard"), {{{}, {}, x.global_extents()}},
        {.c = x.data(), .out = result.data(), .strides = {nullptr, nullptr, detail::block_strides(x)}});
  }
  return result;
}

/// The bytes and messages this rank sends in reshard<To>(x): the reshard plan's model, or for a
/// BlockCyclic or SplitFirstLarger source or target the redistribution's (kernels/redistribute.hpp).
template <TensorShardingType To, typename Scalar, MeshType M, typename From, typename L, typename W>
Traffic reshard_traffic(const DistributedArray<Scalar, M, From, L, W>& x) {
  using Source = DistributedArray<Scalar, M, From, L, W>;
  using Result = DistributedArray<Scalar, M, To, detail::resharded_layout_t<L, To>>;
  const auto bytes = static_cast<std::int64_t>(sizeof(Scalar));
  if constexpr (Source::redistributed || Result::redistributed)
    return detail::redistribution_traffic(Source::own_placement(), Result::own_placement(), x.global_extents(),
                                          x.groups().geometry(), bytes);
  else
    return reshard_plan<M, From, To>::traffic(x.groups().mesh(), x.groups().coordinate(), x.global_extents(), bytes);
}

/// Finishes a pending sum: Partial<axes> becomes the plain sharding (one AllReduce).
template <typename Scalar, MeshType M, typename From, typename L, typename W>
auto reduce(const DistributedArray<Scalar, M, From, L, W>& x) {
  static_assert(From::is_partial, "shardwise::reduce: the array has no Partial<...> to reduce");
  return [&]<std::size_t... D>(std::index_sequence<D...>) {
    return reshard<TensorSharding<typename From::template dim<D>...>>(x);
  }(std::make_index_sequence<From::rank>{});
}

/// Finishes a pending sum into a requested sharding (e.g. a ReduceScatter split).
template <TensorShardingType To, typename Scalar, MeshType M, typename From, typename L, typename W>
auto reduce(const DistributedArray<Scalar, M, From, L, W>& x) {
  static_assert(From::is_partial, "shardwise::reduce: the array has no Partial<...> to reduce");
  return reshard<To>(x);
}

}  // namespace shardwise
