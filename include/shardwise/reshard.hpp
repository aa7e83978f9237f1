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

#include <type_traits>

#include "shardwise/distributed_array.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

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
  detail::execute<detail::reshard_program<M, From, To, Source::storage, Result::storage>, Scalar>(
      x.groups().state("reshard"), {{{}, {}, x.global_extents()}},
      {.c = x.data(), .out = result.data(), .strides = {nullptr, nullptr, detail::block_strides(x)}});
  return result;
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
