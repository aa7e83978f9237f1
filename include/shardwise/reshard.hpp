// shardwise/reshard.hpp: change a matrix's sharding, or finish its pending sum.
//
//   auto cs = sw::reshard<TensorSharding<Split<"x", "y">, Replicated>>(c);   // gather or scatter
//   auto cr = sw::reduce(cp);                    // Partial<axes> becomes the plain sharding
//
// reshard_plan (plan/reshard.hpp) decides the steps at compile time: keep a split, gather
// minor axes, ReduceScatter pending axes into a dimension, AllReduce the rest. Anything else
// would be a reshuffle and does not compile. The one executor runs the steps.
#pragma once

#include "shardwise/kernels/executor.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/sharded_matrix.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

/// The matrix with sharding To (storage order OrderTo), as far as that needs no reshuffle:
/// reduce a Partial (AllReduce), or ReduceScatter it into a dimension, or gather minor axes.
template <TensorShardingType To, int OrderTo = detail::default_storage_order<To>(), typename Scalar, MeshType M,
          typename From, int OrderFrom>
ShardedMatrix<Scalar, M, To, OrderTo> reshard(const ShardedMatrix<Scalar, M, From, OrderFrom>& x) {
  x.agree("shardwise::reshard");
  ShardedMatrix<Scalar, M, To, OrderTo> result(x.groups(), x.rows(), x.cols(), detail::uninitialized);
  detail::execute<detail::reshard_program<M, From, To, detail::matrix_order(OrderFrom), detail::matrix_order(OrderTo)>, Scalar>(
      x.groups().state("reshard"), {{{}, {}, {x.rows(), x.cols()}}},
      {nullptr, nullptr, x.local().data(), result.local().data()});
  return result;
}

/// Finishes a pending sum: Partial<axes> becomes the plain sharding (one AllReduce).
template <typename Scalar, MeshType M, typename From, int Order>
auto reduce(const ShardedMatrix<Scalar, M, From, Order>& x) {
  static_assert(From::is_partial, "shardwise::reduce: the matrix has no Partial<...> to reduce");
  return reshard<TensorSharding<typename From::template dim<0>, typename From::template dim<1>>>(x);
}

/// Finishes a pending sum into a requested sharding (e.g. a ReduceScatter split).
template <TensorShardingType To, typename Scalar, MeshType M, typename From, int Order>
auto reduce(const ShardedMatrix<Scalar, M, From, Order>& x) {
  static_assert(From::is_partial, "shardwise::reduce: the matrix has no Partial<...> to reduce");
  return reshard<To>(x);
}

}  // namespace shardwise
