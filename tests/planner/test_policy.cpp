// Policy selection, schedules, cost model and describe(): mostly static_assert,
// with GoogleTest for the strings and for sweeps over every rank.
#include <gtest/gtest.h>

#include <string>

#include "shardwise/plan/matmul_plan.hpp"

namespace sw = shardwise;
using sw::Operand;
using sw::Replicated;
using sw::StepKind;
template <sw::fixed_string... N> using Split = sw::Split<N...>;
template <sw::fixed_string... N> using Partial = sw::Partial<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;
using Rep = sw::replicated_sharding_t<2>;

using Line = sw::Mesh<sw::Axis<"x", 4>>;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using Cube = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>, sw::Axis<"z", 2>>;

template <typename M, typename A, typename B, typename C = sw::NaturalOutput, typename V = sw::variant::Standard>
using Plan = sw::matmul_plan<M, A, B, C, V>;

// Axis lists for building expected schedules by hand.
constexpr sw::detail::axis_list axes(std::initializer_list<int> list) {
  sw::detail::axis_list result;
  for (int a : list) result.push_back(a);
  return result;
}
constexpr int X = 0, Y = 1, Z = 2;
constexpr sw::Step gather(Operand op, int dim, sw::detail::axis_list over) {
  return {StepKind::all_gather, op, dim, over, {}};
}
constexpr sw::Step gemm{StepKind::local_gemm, Operand::C, -1, {}, {}};
constexpr sw::Step all_reduce(sw::detail::axis_list over) { return {StepKind::all_reduce, Operand::C, -1, over, {}}; }
constexpr sw::Step reduce_scatter(int dim, sw::detail::axis_list over) {
  return {StepKind::reduce_scatter, Operand::C, dim, over, {}};
}

// ---- the seed's test cases on a 2-D mesh x * y, replicated output -------------------
namespace seed {
using MatchedY = Plan<Grid, TS<Replicated, Split<"y">>, TS<Split<"y">, Replicated>, Rep>;
using MatchedX = Plan<Grid, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>, Rep>;
using MatchedXY = Plan<Grid, TS<Replicated, Split<"x", "y">>, TS<Split<"x", "y">, Replicated>, Rep>;
using Unmatched = Plan<Grid, TS<Replicated, Split<"y">>, TS<Split<"x">, Replicated>, Rep>;
using Outer = Plan<Grid, TS<Split<"x">, Split<"y">>, TS<Split<"x">, Replicated>, Rep>;
using Full = Plan<Grid, TS<Split<"x">, Split<"y">>, TS<Split<"x">, Split<"y">>, Rep>;

static_assert(std::is_same_v<MatchedY::policy, sw::policy::MatchedInner>);
static_assert(std::is_same_v<MatchedX::policy, sw::policy::MatchedInner>);
static_assert(std::is_same_v<MatchedXY::policy, sw::policy::MatchedInner>);
static_assert(std::is_same_v<Unmatched::policy, sw::policy::UnmatchedInner>);
static_assert(std::is_same_v<Outer::policy, sw::policy::Outer>);
static_assert(std::is_same_v<Full::policy, sw::policy::Full>);

static_assert(MatchedY::schedule == sw::Schedule{gemm, all_reduce(axes({Y}))});
static_assert(MatchedX::schedule == sw::Schedule{gemm, all_reduce(axes({X}))});
static_assert(MatchedXY::schedule == sw::Schedule{gemm, all_reduce(axes({X, Y}))});
static_assert(Unmatched::schedule ==
              sw::Schedule{gather(Operand::A, 1, axes({Y})), gather(Operand::B, 0, axes({X})), gemm});
static_assert(Outer::schedule == sw::Schedule{gather(Operand::A, 1, axes({Y})), gather(Operand::B, 0, axes({X})),
                                              gemm, gather(Operand::C, 0, axes({X}))});
static_assert(Full::schedule == sw::Schedule{gather(Operand::A, 1, axes({Y})), gather(Operand::B, 0, axes({X})),
                                             gemm, gather(Operand::C, 1, axes({Y})), gather(Operand::C, 0, axes({X}))});
}  // namespace seed

// The selection API as a user writes it: A[m, k] split over (x, y), B[k, n] over x: Outer.
static_assert(std::is_same_v<sw::matmul_policy_t<Grid, TS<Split<"x">, Split<"y">>, TS<Split<"x">, Replicated>>,
                             sw::policy::Outer>);
static_assert(std::is_same_v<sw::matmul_output_t<Grid, TS<Split<"x">, Split<"y">>, TS<Split<"x">, Split<"y">>>,
                             TS<Split<"x">, Split<"y">>>);

// ---- all five families on 1-D, 2-D and 3-D meshes ----------------------------------
template <typename M, typename A, typename B>
using policy_of = sw::matmul_policy_t<M, A, B>;

static_assert(std::is_same_v<policy_of<Line, Rep, Rep>, sw::policy::Unsharded>);
static_assert(std::is_same_v<policy_of<Line, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>>, sw::policy::MatchedInner>);
static_assert(std::is_same_v<policy_of<Line, TS<Replicated, Split<"x">>, Rep>, sw::policy::UnmatchedInner>);
static_assert(std::is_same_v<policy_of<Line, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>>, sw::policy::Outer>);
static_assert(std::is_same_v<policy_of<Line, TS<Replicated, Replicated>, TS<Replicated, Split<"x">>>, sw::policy::Outer>);

static_assert(std::is_same_v<policy_of<Grid, Rep, Rep>, sw::policy::Unsharded>);
static_assert(std::is_same_v<policy_of<Grid, TS<Replicated, Split<"y", "x">>, TS<Split<"y", "x">, Replicated>>, sw::policy::MatchedInner>);
static_assert(std::is_same_v<policy_of<Grid, TS<Replicated, Split<"y", "x">>, TS<Split<"x", "y">, Replicated>>, sw::policy::UnmatchedInner>);
static_assert(std::is_same_v<policy_of<Grid, TS<Split<"y">, Replicated>, Rep>, sw::policy::Outer>);
static_assert(std::is_same_v<policy_of<Grid, TS<Split<"y">, Replicated>, TS<Replicated, Split<"x">>>, sw::policy::Full>);

static_assert(std::is_same_v<policy_of<Cube, Rep, Rep>, sw::policy::Unsharded>);
static_assert(std::is_same_v<policy_of<Cube, TS<Replicated, Split<"z">>, TS<Split<"z">, Replicated>>, sw::policy::MatchedInner>);
static_assert(std::is_same_v<policy_of<Cube, TS<Replicated, Split<"z">>, TS<Split<"y">, Replicated>>, sw::policy::UnmatchedInner>);
static_assert(std::is_same_v<policy_of<Cube, TS<Split<"x">, Split<"z">>, TS<Split<"z">, Replicated>>, sw::policy::Outer>);
static_assert(std::is_same_v<policy_of<Cube, TS<Split<"x">, Split<"z">>, TS<Split<"z">, Split<"y">>>, sw::policy::Full>);

// 3-D: matched k over z leaves a pending sum, reduced by default (C = [x, y]).
using CubeFull = Plan<Cube, TS<Split<"x">, Split<"z">>, TS<Split<"z">, Split<"y">>>;
static_assert(CubeFull::schedule == sw::Schedule{gemm, all_reduce(axes({Z}))});
// ... or scattered into the rows, or left pending.
static_assert(Plan<Cube, TS<Split<"x">, Split<"z">>, TS<Split<"z">, Split<"y">>, TS<Split<"x", "z">, Split<"y">>>::schedule ==
              sw::Schedule{gemm, reduce_scatter(0, axes({Z}))});
static_assert(Plan<Cube, TS<Split<"x">, Split<"z">>, TS<Split<"z">, Split<"y">>,
                   TS<Split<"x">, Split<"y">, Partial<"z">>>::schedule == sw::Schedule{gemm});

// ---- output options ------------------------------------------------------------------
using MatchedLine = Plan<Line, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>>;
static_assert(std::is_same_v<MatchedLine::output_sharding, Rep>);
static_assert(Plan<Line, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>, TS<Replicated, Split<"x">>>::schedule ==
              sw::Schedule{gemm, reduce_scatter(1, axes({X}))});
static_assert(Plan<Line, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>, TS<Replicated, Replicated, Partial<"x">>>::schedule ==
              sw::Schedule{gemm});
// Two pending axes: one scattered into the columns, the other all-reduced.
static_assert(Plan<Grid, TS<Replicated, Split<"x", "y">>, TS<Split<"x", "y">, Replicated>, TS<Replicated, Split<"y">>>::schedule ==
              sw::Schedule{gemm, reduce_scatter(1, axes({Y})), all_reduce(axes({X}))});
// Gathering only the minor axis of a two-axis split.
static_assert(Plan<Grid, TS<Split<"x", "y">, Replicated>, Rep, TS<Split<"x">, Replicated>>::schedule ==
              sw::Schedule{gemm, gather(Operand::C, 0, axes({Y}))});

// ---- variants ---------------------------------------------------------------------------
static_assert(Plan<Line, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>, sw::NaturalOutput, sw::variant::Ring>::schedule ==
              sw::Schedule{{StepKind::ring_all_gather_gemm, Operand::B, 0, axes({X}), {}}});
static_assert(Plan<Line, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>, sw::variant::Ring>::schedule ==
              sw::Schedule{{StepKind::ring_gemm_reduce_scatter, Operand::C, 0, axes({X}), {}}});
// Ring fuses only the k-gather: the C gather of the seed output stays a plain AllGather.
static_assert(Plan<Grid, TS<Split<"x">, Replicated>, TS<Split<"y">, Replicated>, Rep, sw::variant::Ring>::schedule ==
              sw::Schedule{{StepKind::ring_all_gather_gemm, Operand::B, 0, axes({Y}), {}}, gather(Operand::C, 0, axes({X}))});
static_assert(Plan<Grid, TS<Split<"x">, Split<"y">>, TS<Split<"x">, Split<"y">>, sw::NaturalOutput, sw::variant::Summa<64>>::schedule ==
              sw::Schedule{{StepKind::summa_gemm, Operand::C, -1, axes({Y}), axes({X})}});

// ---- cost model against hand-computed numbers ----------------------------------------
constexpr std::int64_t MiB = 1 << 20;
constexpr sw::MatmulShape square4096{.m = 4096, .k = 4096, .n = 4096};
// A whole 4096^2 fp64 matrix is 128 MiB.
static_assert(seed::MatchedY::max_traffic(Grid{}, square4096, 8) == sw::Traffic{2 * 3 * 128 * MiB / 4, 6});
static_assert(seed::MatchedX::max_traffic(Grid{}, square4096, 8) == sw::Traffic{128 * MiB, 2});
static_assert(seed::MatchedXY::max_traffic(Grid{}, square4096, 8) == sw::Traffic{2 * 7 * 128 * MiB / 8, 14});
static_assert(seed::Unmatched::max_traffic(Grid{}, square4096, 8) == sw::Traffic{(96 + 64) * MiB, 3 + 1});
// A's k-gather: 64 MiB row block, 3/4 of it; B's: 64 MiB, half; C's rows: 64 MiB.
static_assert(seed::Outer::max_traffic(Grid{}, square4096, 8) == sw::Traffic{(48 + 64 + 64) * MiB, 3 + 1 + 1});
// C = [x, y] gathered over y (48 MiB) then over x (64 MiB).
static_assert(seed::Full::max_traffic(Grid{}, square4096, 8) == sw::Traffic{(48 + 16 + 48 + 64) * MiB, 3 + 1 + 3 + 1});
static_assert(Plan<Grid, TS<Split<"x">, Split<"y">>, TS<Split<"x">, Split<"y">>>::max_traffic(Grid{}, square4096, 8) ==
              sw::Traffic{(48 + 16) * MiB, 4});
// SUMMA, panels of 256: 16 panels; a rank relays 12 of the 16 A panels (2048 x 256: 4 MiB
// each) and sends the 8 B panels it owns (256 x 1024: 2 MiB each): the bytes of the gathers.
static_assert(Plan<Grid, TS<Split<"x">, Split<"y">>, TS<Split<"x">, Split<"y">>, sw::NaturalOutput,
                   sw::variant::Summa<256>>::max_traffic(Grid{}, square4096, 8) == sw::Traffic{(48 + 16) * MiB, 12 + 8});
// fp32 halves the bytes, not the messages.
static_assert(seed::MatchedX::max_traffic(Grid{}, square4096, 4) == sw::Traffic{64 * MiB, 2});

// Uneven: 10 rows over 4 ranks are 2, 3, 2, 3 (part i starts at floor(10 i / 4)).
// Ring all-gather: rank r sends everything but the block of rank r + 1.
using OuterLine = Plan<Line, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>, Rep>;
static_assert(OuterLine::traffic(Line{}, {0}, {.m = 10, .k = 10, .n = 1}, 1) == sw::Traffic{(10 - 3) * 1 + (10 - 3) * 1, 6});
static_assert(OuterLine::traffic(Line{}, {1}, {.m = 10, .k = 10, .n = 1}, 1) == sw::Traffic{(10 - 2) * 1 + (10 - 2) * 1, 6});
// Ring reduce-scatter: rank r sends everything but its own block.
using ScatterLine = Plan<Line, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>>;
static_assert(ScatterLine::traffic(Line{}, {0}, {.m = 10, .k = 8, .n = 3}, 8) == sw::Traffic{(10 - 2) * 3 * 8, 3});
static_assert(ScatterLine::traffic(Line{}, {3}, {.m = 10, .k = 8, .n = 3}, 8) == sw::Traffic{(10 - 3) * 3 * 8, 3});

// Standard and ring move the same bytes.
static_assert(Plan<Line, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>>::max_traffic(Line{}, {.m = 37, .k = 23, .n = 11}, 8) ==
              Plan<Line, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>, sw::NaturalOutput,
                   sw::variant::Ring>::max_traffic(Line{}, {.m = 37, .k = 23, .n = 11}, 8));

// Reshard plans: reduce a Partial, or gather.
using ReduceY = sw::reshard_plan<Grid, TS<Split<"x">, Replicated, Partial<"y">>, TS<Split<"x">, Replicated>>;
static_assert(ReduceY::schedule == sw::Schedule{all_reduce(axes({Y}))});
static_assert(sw::reshard_plan<Grid, TS<Split<"x">, Replicated, Partial<"y">>, TS<Split<"x">, Split<"y">>>::schedule ==
              sw::Schedule{reduce_scatter(1, axes({Y}))});
static_assert(sw::reshard_plan<Grid, TS<Split<"x">, Split<"y">>, Rep>::schedule ==
              sw::Schedule{gather(Operand::C, 1, axes({Y})), gather(Operand::C, 0, axes({X}))});

// Dynamic extents: the policy depends only on names; the cost on the extents given.
using Elastic = sw::Mesh<sw::Axis<"dp", sw::dynamic_extent>>;
using ElasticMatched = Plan<Elastic, TS<Replicated, Split<"dp">>, TS<Split<"dp">, Replicated>>;
static_assert(std::is_same_v<ElasticMatched::policy, sw::policy::MatchedInner>);
static_assert(ElasticMatched::max_traffic(Elastic{4}, {.m = 8, .k = 8, .n = 8}, 1) == sw::Traffic{2 * 3 * 64 / 4, 6});

// ---- asking without failing a compile: valid_matmul and matmul_error_v ---------------------
static_assert(sw::valid_matmul<Grid, TS<Replicated, Split<"y">>, TS<Split<"y">, Replicated>>);
static_assert(sw::matmul_error_v<Grid, TS<Replicated, Split<"y">>, TS<Split<"y">, Replicated>>.empty());
static_assert(!sw::valid_matmul<Grid, TS<Split<"x">, Replicated>, TS<Replicated, Split<"x">>>);
static_assert(sw::matmul_error_v<Grid, TS<Split<"x">, Replicated>, TS<Replicated, Split<"x">>>.find(
                  "the same mesh axis splits the rows of A (m) and the columns of B (n)") != std::string_view::npos);
// ... which a requested output without the conflict resolves, by gathering B's columns first.
static_assert(sw::valid_matmul<Grid, TS<Split<"x">, Replicated>, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>>);
static_assert(!sw::valid_matmul<Grid, TS<Split<"z">, Replicated>, Rep>);                // no axis z
static_assert(!sw::valid_matmul<Grid, TS<Split<"x">>, Rep>);                             // one dimension
static_assert(!sw::valid_matmul<Grid, Split<"x">, Rep>);                                 // not a TensorSharding
static_assert(!sw::valid_matmul<Grid, TS<Replicated, Replicated, Partial<"x">>, Rep>);  // a Partial input
static_assert(!sw::valid_matmul<Grid, Rep, Rep, sw::NaturalOutput, sw::variant::Summa<>>);
static_assert(sw::matmul_error_v<Grid, Rep, Rep, sw::NaturalOutput, sw::variant::Ring>.find("ring variant") !=
              std::string_view::npos);
static_assert(!sw::valid_matmul<Grid, TS<Split<"x">, Replicated>, Rep, TS<Split<"y">, Replicated>>);
static_assert(sw::matmul_error_v<Grid, TS<Split<"x">, Replicated>, Rep, TS<Split<"y">, Replicated>>.find(
                  "cannot be reached for the rows (m)") != std::string_view::npos);

// ---- run-time checks -----------------------------------------------------------------

TEST(Policy, DescribeSeedCases) {
  EXPECT_EQ(seed::MatchedY::describe(), "MatchedInner: local GEMM -> AllReduce C over y => C[-, -]");
  EXPECT_EQ(seed::MatchedXY::describe(), "MatchedInner: local GEMM -> AllReduce C over (x,y) => C[-, -]");
  EXPECT_EQ(seed::Unmatched::describe(),
            "UnmatchedInner: AllGather A along k over y -> AllGather B along k over x -> local GEMM => C[-, -]");
  EXPECT_EQ(seed::Outer::describe(),
            "Outer: AllGather A along k over y -> AllGather B along k over x -> local GEMM -> "
            "AllGather C along m over x => C[-, -]");
  EXPECT_EQ(seed::Full::describe(),
            "Full: AllGather A along k over y -> AllGather B along k over x -> local GEMM -> "
            "AllGather C along n over y -> AllGather C along m over x => C[-, -]");
  EXPECT_EQ((Plan<Line, Rep, Rep>::describe()), "Unsharded: local GEMM => C[-, -]");
}

TEST(Policy, DescribeOutputsAndVariants) {
  EXPECT_EQ(ScatterLine::describe(), "MatchedInner: local GEMM -> ReduceScatter C along m over x => C[x, -]");
  EXPECT_EQ((Plan<Line, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>,
                  TS<Replicated, Replicated, Partial<"x">>>::describe()),
            "MatchedInner: local GEMM => C[-, -] + Partial(x)");
  EXPECT_EQ((Plan<Line, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>, sw::NaturalOutput,
                  sw::variant::Ring>::describe()),
            "Outer: ring AllGather B along k over x overlapped with the local GEMM => C[x, -]");
  EXPECT_EQ((Plan<Grid, TS<Split<"x">, Split<"y">>, TS<Split<"x">, Split<"y">>, sw::NaturalOutput,
                  sw::variant::Summa<>>::describe()),
            "Full: SUMMA: Broadcast A panels along k over y and B panels along k over x, GEMM per panel => C[x, y]");
  EXPECT_EQ(ReduceY::describe(), "AllReduce C over y => [x, -]");
}

// Summed over ranks, every ring collective sends (P-1) * N elements: check that the
// per-rank model adds up, for uneven shapes on every mesh.
template <typename M, typename P>
std::int64_t total_bytes(const M& mesh, sw::MatmulShape shape) {
  std::int64_t sum = 0;
  for (int r = 0; r < mesh.size(); ++r) sum += P::traffic(mesh, mesh.unravel(r), shape, 1).bytes;
  return sum;
}

TEST(Policy, RingTotalsOverAllRanks) {
  for (std::int64_t m : {1, 5, 13}) {
    for (std::int64_t n : {3, 7}) {
      const sw::MatmulShape shape{.m = m, .k = 9, .n = n};
      // MatchedInner over (x,y): one group of 8 ranks; a ring all-reduce sends 2 * 7 * m * n in all.
      EXPECT_EQ((total_bytes<Grid, seed::MatchedXY>(Grid{}, shape)), 2 * 7 * m * n);
      // Replicated output of Outer on a line: B (9 x n) and C (m x n) gathered by 4 ranks.
      EXPECT_EQ((total_bytes<Line, OuterLine>(Line{}, shape)), 3 * 9 * n + 3 * m * n);
    }
  }
}

// ---- memory footprint model ---------------------------------------------------------------
// Outer on 2 ranks, 8 x 6 times 6 x 4: A block 4 x 6, B block 3 x 4, C block 4 x 4, and B
// gathered whole (6 x 4): 24 + 12 + 16 + 24 elements.
using Pair = sw::Mesh<sw::Axis<"x", 2>>;
static_assert(Plan<Pair, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>>::footprint_bytes(Pair{}, {0}, {.m = 8, .k = 6, .n = 4}, 8) ==
              8 * (24 + 12 + 16 + 24));
// MatchedInner scattered: A 8 x 3, B 3 x 4, C 4 x 4, and the whole partial C (8 x 4) before the scatter.
static_assert(Plan<Pair, TS<Replicated, Split<"x">>, TS<Split<"x">, Replicated>, TS<Split<"x">, Replicated>>::footprint_bytes(
                  Pair{}, {0}, {.m = 8, .k = 6, .n = 4}, 8) == 8 * (24 + 12 + 16 + 32));
