// FeedForward policy selection, the forward schedules, the backward schedules derived from
// them by conjugation, the cost model and describe(): static_assert where it can be, and
// GoogleTest for strings and sweeps over every rank. Pure compile-time header: no MPI, no Eigen.
#include <gtest/gtest.h>

#include <string>

#include "shardwise/nn/ffn_policy.hpp"

namespace sw = shardwise;
using sw::FfnCollective;
using sw::FfnTensor;
using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;

using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using Cube = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>, sw::Axis<"z", 3>>;
using Tp = sw::Mesh<sw::Axis<"tp", 4>>;
using Odd = sw::Mesh<sw::Axis<"tp", 3>>;
using Hybrid = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"pp", 2>, sw::Axis<"tp", 2>>;

using Rep3 = TS<R, R, R>;
using Rep2 = TS<R, R>;

template <typename M, typename X, typename W1, typename W2, typename Y = X>
using Plan = sw::feed_forward_plan<M, X, W1, W2, Y>;

// The seed's GSPMD policy on x * y: X = [x, -, y], W1 = [x, y], W2 = [y, x].
using Gspmd = Plan<Grid, TS<S<"x">, R, S<"y">>, TS<S<"x">, S<"y">>, TS<S<"y">, S<"x">>>;
using MegatronTp = Plan<Tp, Rep3, TS<R, S<"tp">>, TS<S<"tp">, R>>;
using MegatronSp = Plan<Tp, TS<R, S<"tp">, R>, TS<R, S<"tp">>, TS<S<"tp">, R>>;
using Local = Plan<Tp, Rep3, Rep2, Rep2>;

// ---- policy selection ------------------------------------------------------------------
static_assert(std::is_same_v<Gspmd::policy, sw::ffn_policy::GSPMD>);
static_assert(std::is_same_v<MegatronTp::policy, sw::ffn_policy::MegatronTP>);
static_assert(std::is_same_v<MegatronSp::policy, sw::ffn_policy::MegatronSP>);
static_assert(std::is_same_v<Local::policy, sw::ffn_policy::Unsharded>);
// Axis lists work like single axes, and the axes a layer does not name are free for others
// (data and pipeline parallelism around a Megatron layer).
static_assert(std::is_same_v<sw::ffn_policy_t<Cube, TS<S<"x", "y">, R, S<"z">>, TS<S<"x", "y">, S<"z">>,
                                              TS<S<"z">, S<"x", "y">>>,
                             sw::ffn_policy::GSPMD>);
static_assert(std::is_same_v<sw::ffn_policy_t<Hybrid, Rep3, TS<R, S<"tp">>, TS<S<"tp">, R>>, sw::ffn_policy::MegatronTP>);
static_assert(std::is_same_v<sw::ffn_policy_t<Cube, TS<R, S<"y", "z">, R>, TS<R, S<"y", "z">>, TS<S<"y", "z">, R>>,
                             sw::ffn_policy::MegatronSP>);
// The bias shardings follow W1's columns and Y's model dimension.
static_assert(std::is_same_v<Gspmd::b1_sharding, TS<R, S<"y">>>);
static_assert(std::is_same_v<Gspmd::b2_sharding, TS<R, S<"y">>>);
static_assert(std::is_same_v<MegatronTp::b1_sharding, TS<R, S<"tp">>>);
static_assert(std::is_same_v<MegatronTp::b2_sharding, Rep2>);

// ---- schedules ---------------------------------------------------------------------------
constexpr sw::detail::axis_list axes(std::initializer_list<int> list) {
  sw::detail::axis_list result;
  for (int a : list) result.push_back(a);
  return result;
}

// Every forward AllGather has its ReduceScatter in the backward (on the gradient, same
// dimension, same axes) and every forward ReduceScatter its AllGather: the conjugates.
template <typename P>
constexpr bool conjugate_collectives() {
  auto gradient_of = [](FfnTensor t) {
    return t == FfnTensor::X ? FfnTensor::dX : t == FfnTensor::W1 ? FfnTensor::dW1 : t == FfnTensor::W2 ? FfnTensor::dW2 : FfnTensor::dY;
  };
  for (const auto& f : P::forward_schedule) {
    if (f.kind == FfnCollective::all_reduce) continue;
    const FfnCollective conjugate = f.kind == FfnCollective::all_gather ? FfnCollective::reduce_scatter : FfnCollective::all_gather;
    if (!P::has(P::backward_schedule, gradient_of(f.tensor), conjugate)) return false;
    const auto b = P::find(P::backward_schedule, gradient_of(f.tensor), conjugate);
    if (b.dim != f.dim || !(b.axes == f.axes)) return false;
  }
  return true;
}
static_assert(conjugate_collectives<Gspmd>() && conjugate_collectives<MegatronSp>() && conjugate_collectives<MegatronTp>());

// Megatron TP: exactly one AllReduce forward (of Y) and one backward (of dX), over tp.
static_assert(MegatronTp::forward_schedule.size() == 1 && MegatronTp::backward_schedule.size() == 1);
static_assert(MegatronTp::forward_schedule[0].kind == FfnCollective::all_reduce &&
              MegatronTp::forward_schedule[0].tensor == FfnTensor::Y && MegatronTp::forward_schedule[0].axes == axes({0}));
static_assert(MegatronTp::backward_schedule[0].kind == FfnCollective::all_reduce &&
              MegatronTp::backward_schedule[0].tensor == FfnTensor::dX);
static_assert(Local::forward_schedule.empty() && Local::backward_schedule.empty());

TEST(FfnPolicy, DescribeGivesTheSchedules) {
  EXPECT_EQ(Gspmd::describe(),
            "GSPMD: forward [AllGather X along m over y, AllGather W1 along m over x, AllGather W2 along m over x, "
            "ReduceScatter Y along m over y]; backward [AllGather dY along m over y, AllReduce db2 over x, "
            "ReduceScatter dW2 along m over x, AllReduce db1 over x, ReduceScatter dW1 along m over x, "
            "ReduceScatter dX along m over y]");
  EXPECT_EQ(MegatronTp::describe(), "MegatronTP: forward [AllReduce Y over tp]; backward [AllReduce dX over tp]");
  EXPECT_EQ(MegatronSp::describe(),
            "MegatronSP: forward [AllGather X along s over tp, ReduceScatter Y along s over tp]; backward "
            "[AllGather dY along s over tp, ReduceScatter dX along s over tp]");
  EXPECT_EQ(Local::describe(), "Unsharded: forward [local]; backward [local]");
  EXPECT_EQ((Plan<Cube, TS<S<"x", "y">, R, S<"z">>, TS<S<"x", "y">, S<"z">>, TS<S<"z">, S<"x", "y">>>::describe()),
            "GSPMD: forward [AllGather X along m over z, AllGather W1 along m over (x,y), AllGather W2 along m over "
            "(x,y), ReduceScatter Y along m over z]; backward [AllGather dY along m over z, AllReduce db2 over (x,y), "
            "ReduceScatter dW2 along m over (x,y), AllReduce db1 over (x,y), ReduceScatter dW1 along m over (x,y), "
            "ReduceScatter dX along m over z]");
}

// ---- cost model ----------------------------------------------------------------------------

TEST(FfnPolicy, MegatronTpIsOneAllReduceOfBsmEachWay) {
  const sw::FfnShape shape{.b = 4, .s = 16, .m = 32, .h = 128};
  const std::int64_t n = shape.b * shape.s * shape.m;
  for (int rank = 0; rank < 4; ++rank) {
    const auto coordinate = Tp{}.unravel(rank);
    const auto forward = MegatronTp::forward_traffic(Tp{}, coordinate, shape, 4);
    const auto backward = MegatronTp::backward_traffic(Tp{}, coordinate, shape, 4);
    const sw::Traffic one = sw::detail::ring_all_reduce_traffic(n, 4, rank, 4);
    EXPECT_EQ(forward.all_reduce.calls, 1);
    EXPECT_EQ(forward.all_reduce.traffic, one);
    EXPECT_EQ(forward.total(), one);
    EXPECT_EQ(backward.all_reduce.calls, 1);
    EXPECT_EQ(backward.total(), one);
    EXPECT_EQ(one.bytes, 2 * 3 * n / 4 * 4);  // 2 (P-1)/P N words of 4 bytes
    // A first layer needs no dX: no collective at all in its backward.
    EXPECT_EQ(MegatronTp::backward_traffic(Tp{}, coordinate, shape, 4, false), sw::FfnTraffic{});
  }
}

TEST(FfnPolicy, MegatronSpGathersInAndScattersOut) {
  const sw::FfnShape shape{.b = 2, .s = 12, .m = 8, .h = 16};
  const std::int64_t n = shape.b * shape.s * shape.m;
  for (int rank = 0; rank < 4; ++rank) {
    const auto forward = MegatronSp::forward_traffic(Tp{}, Tp{}.unravel(rank), shape, 8);
    const auto backward = MegatronSp::backward_traffic(Tp{}, Tp{}.unravel(rank), shape, 8);
    EXPECT_EQ(forward.all_gather.traffic, (sw::Traffic{3 * n / 4 * 8, 3}));
    EXPECT_EQ(forward.reduce_scatter.traffic, (sw::Traffic{3 * n / 4 * 8, 3}));
    EXPECT_EQ(forward.all_reduce.calls, 0);
    EXPECT_EQ(backward, forward);  // AG dY, RS dX: the same volumes
  }
}

TEST(FfnPolicy, UnevenSequenceBlocksFollowThePartitionRule) {
  // s = 7 over 3 ranks: blocks 2, 2, 3. Rank r sends all but the block of r + 1 in the
  // AllGather, all but its own in the ReduceScatter (b = 1, m = 1: one element per token).
  using P = Plan<Odd, TS<R, S<"tp">, R>, TS<R, S<"tp">>, TS<S<"tp">, R>>;
  const sw::FfnShape shape{.b = 1, .s = 7, .m = 1, .h = 5};
  const std::int64_t gather[] = {7 - 2, 7 - 3, 7 - 2}, scatter[] = {7 - 2, 7 - 2, 7 - 3};
  for (int rank = 0; rank < 3; ++rank) {
    const auto f = P::forward_traffic(Odd{}, Odd{}.unravel(rank), shape, 1);
    EXPECT_EQ(f.all_gather.traffic.bytes, gather[rank]) << "rank " << rank;
    EXPECT_EQ(f.reduce_scatter.traffic.bytes, scatter[rank]) << "rank " << rank;
  }
}

TEST(FfnPolicy, GspmdEvenCaseMatchesTheTextbookFormulas) {
  // Even extents on x = 2, y = 4: every collective moves (P - 1) / P of what it gathers or scatters.
  const sw::FfnShape shape{.b = 4, .s = 6, .m = 16, .h = 32};
  const std::int64_t bytes = 8, px = 2, py = 4;
  const std::int64_t x_local = shape.b / px * shape.s * shape.m;  // X after its gather over y
  const std::int64_t w = shape.m * shape.h / py;                  // W1, W2 after their gathers over x
  for (int rank = 0; rank < 8; ++rank) {
    const auto f = Gspmd::forward_traffic(Grid{}, Grid{}.unravel(rank), shape, bytes);
    const auto b = Gspmd::backward_traffic(Grid{}, Grid{}.unravel(rank), shape, bytes);
    EXPECT_EQ(f.all_gather.traffic.bytes, ((py - 1) * x_local / py + 2 * (px - 1) * w / px) * bytes);
    EXPECT_EQ(f.all_gather.calls, 3);
    EXPECT_EQ(f.reduce_scatter.traffic.bytes, (py - 1) * x_local / py * bytes);
    EXPECT_EQ(b.all_gather.traffic.bytes, (py - 1) * x_local / py * bytes);
    EXPECT_EQ(b.reduce_scatter.traffic.bytes, ((py - 1) * x_local / py + 2 * (px - 1) * w / px) * bytes);
    EXPECT_EQ(b.reduce_scatter.calls, 3);
    // db1 [h / y] and db2 [m / y] are summed over the batch axis x.
    EXPECT_EQ(b.all_reduce.calls, 2);
    EXPECT_EQ(b.all_reduce.traffic.bytes, (shape.h / py + shape.m / py) * bytes);  // 2 (P-1)/P n with P = 2
  }
}
