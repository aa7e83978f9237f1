// planned_matmul: the sharding planner's answer as types, computed in a constant expression.
// This file compiles with g++ and clang++ at their default constexpr limits (no
// -fconstexpr-ops-limit, no -fconstexpr-steps), which is what it tests first: the planner on
// 2 x 2, 4 x 3, 2 x 2 x 2, 16 x 16 x 16 (4096 ranks), 64 x 64 and 2 x 1 x 2 x 1 meshes, even
// and uneven shapes, with and without a memory budget. The small meshes' plans then run on the virtual
// cluster: the product against serial Eigen, each rank's counted bytes against the plan's
// model, and the busiest rank's against the planner's; the footprint model against what the
// kernels really allocate.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "local_checks.hpp"
#include "products/matmul_support.hpp"
#include "shardwise/comm/virtual_cluster.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

constexpr std::int64_t unlimited = sw::MatmulProblem{}.budget_bytes;

/// The memory-independent lower bound on q x q x q ranks for m = n = k, in bytes of doubles
/// (3 (n^3/P)^(2/3) - 3 n^2/P words), which the 3-D algorithm meets.
constexpr std::int64_t cube_bound_bytes(std::int64_t n, std::int64_t q) {
  return static_cast<std::int64_t>(8 * sw::matmul_lower_bound(n, n, n, q * q * q).words);
}

using Square = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
constexpr sw::MatmulProblem square_problem{{.m = 12, .k = 14, .n = 10}, 8, 4096};
constexpr sw::MatmulChoice square_choice = sw::plan_matmul(Square{}, square_problem);
static_assert(square_choice.found && square_choice.footprint_bytes <= 4096);
using SquarePlan = sw::planned_matmul<Square, square_choice>;

using Oblong = sw::Mesh<sw::Axis<"x", 4>, sw::Axis<"y", 3>>;
constexpr sw::MatmulProblem oblong_problem{{.m = 50, .k = 37, .n = 20}, 8, unlimited};
constexpr sw::MatmulChoice oblong_choice = sw::plan_matmul(Oblong{}, oblong_problem);
static_assert(oblong_choice.found);
using OblongPlan = sw::planned_matmul<Oblong, oblong_choice>;

using Cube = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>, sw::Axis<"z", 2>>;
constexpr sw::MatmulProblem cube_problem{{.m = 64, .k = 64, .n = 64}, 8, unlimited};
constexpr sw::MatmulChoice cube_choice = sw::plan_matmul(Cube{}, cube_problem);
// The 3-D algorithm, at the lower bound.
static_assert(cube_choice.found && cube_choice.traffic.bytes == cube_bound_bytes(64, 2));
using CubePlan = sw::planned_matmul<Cube, cube_choice>;

using BigCube = sw::Mesh<sw::Axis<"x", 16>, sw::Axis<"y", 16>, sw::Axis<"z", 16>>;
constexpr sw::MatmulProblem big_cube_problem{{.m = 4096, .k = 4096, .n = 4096}, 8, unlimited};
constexpr sw::MatmulChoice big_cube_choice = sw::plan_matmul(BigCube{}, big_cube_problem);
static_assert(big_cube_choice.found && big_cube_choice.traffic.bytes == cube_bound_bytes(4096, 16));
// Each of m, k and n split over one axis in the product, C scattered over the third.
static_assert(big_cube_choice.kernel_a.dim(0).size() == 1 && big_cube_choice.kernel_a.dim(1).size() == 1 &&
              big_cube_choice.kernel_b.dim(1).size() == 1 && big_cube_choice.c.dim(0).size() + big_cube_choice.c.dim(1).size() == 3);
using BigCubePlan = sw::planned_matmul<BigCube, big_cube_choice>;
static_assert(sw::valid_matmul<BigCube, BigCubePlan::a_sharding, BigCubePlan::b_sharding, BigCubePlan::c_sharding,
                               BigCubePlan::variant>);
// The same with a budget of three times the smallest storage, and an uneven shape.
constexpr sw::MatmulProblem big_cube_tight{{.m = 4096, .k = 4096, .n = 4096}, 8, 3 * 3 * 8 * 4096 * 4096 / 4096};
constexpr sw::MatmulChoice big_cube_tight_choice = sw::plan_matmul(BigCube{}, big_cube_tight);
static_assert(big_cube_tight_choice.found && big_cube_tight_choice.footprint_bytes <= big_cube_tight.budget_bytes &&
              big_cube_tight_choice.traffic.bytes >= big_cube_choice.traffic.bytes);
using BigCubeTightPlan = sw::planned_matmul<BigCube, big_cube_tight_choice>;
constexpr sw::MatmulChoice big_cube_uneven_choice = sw::plan_matmul(BigCube{}, {{.m = 1000, .k = 1000, .n = 1000}, 8, unlimited});
static_assert(big_cube_uneven_choice.found);
using BigCubeUnevenPlan = sw::planned_matmul<BigCube, big_cube_uneven_choice>;

using BigSquare = sw::Mesh<sw::Axis<"x", 64>, sw::Axis<"y", 64>>;
constexpr sw::MatmulChoice big_square_choice = sw::plan_matmul(BigSquare{}, {{.m = 4096, .k = 4096, .n = 4096}, 8, unlimited});
// Each operand gathered once over 64 ranks of a 2-D grid: 2 (q - 1)/q n^2/q words.
static_assert(big_square_choice.found && big_square_choice.traffic.bytes == std::int64_t{8} * 2 * 63 * 4096 * 4096 / (64 * 64));
using BigSquarePlan = sw::planned_matmul<BigSquare, big_square_choice>;

// Axes of extent 1 (a 2 x 1 x 2 x 1 mesh): each once multiplied the search by up to 9, past both
// compilers' default limits on an uneven shape; they change no cost, so the planner leaves them
// out: the plan is that of the 2 x 2 mesh of the other two axes, the same shardings by name.
using Sparse = sw::Mesh<sw::Axis<"a", 2>, sw::Axis<"b", 1>, sw::Axis<"c", 2>, sw::Axis<"d", 1>>;
using SparseKept = sw::Mesh<sw::Axis<"a", 2>, sw::Axis<"c", 2>>;
constexpr sw::MatmulProblem sparse_problem{{.m = 50, .k = 37, .n = 20}, 8, unlimited};
constexpr sw::MatmulChoice sparse_choice = sw::plan_matmul(Sparse{}, sparse_problem);
constexpr sw::MatmulChoice sparse_kept_choice = sw::plan_matmul(SparseKept{}, sparse_problem);
static_assert(sparse_choice.found && sparse_kept_choice.found);
static_assert(sparse_choice.traffic == sparse_kept_choice.traffic &&
              sparse_choice.footprint_bytes == sparse_kept_choice.footprint_bytes &&
              sparse_choice.variant == sparse_kept_choice.variant);
using SparsePlan = sw::planned_matmul<Sparse, sparse_choice>;
using SparseKeptPlan = sw::planned_matmul<SparseKept, sparse_kept_choice>;
static_assert(std::is_same_v<SparsePlan::a_sharding, SparseKeptPlan::a_sharding> &&
              std::is_same_v<SparsePlan::b_sharding, SparseKeptPlan::b_sharding> &&
              std::is_same_v<SparsePlan::c_sharding, SparseKeptPlan::c_sharding> &&
              std::is_same_v<SparsePlan::variant, SparseKeptPlan::variant>);
// Every axis of extent 1: one rank, a local GEMM.
using Single = sw::Mesh<sw::Axis<"x", 1>, sw::Axis<"y", 1>>;
constexpr sw::MatmulChoice single_choice = sw::plan_matmul(Single{}, sparse_problem);
static_assert(single_choice.found && single_choice.traffic == sw::Traffic{} && single_choice.plan.steps.size() == 1);
using SinglePlan = sw::planned_matmul<Single, single_choice>;

/// Runs Plan (for Choice on mesh M) on a virtual cluster: the product, and every rank's counted
/// bytes against the plan's model; the busiest rank's against the planner's.
template <typename M, typename Plan>
void expect_runs(const sw::MatmulChoice& choice, sw::MatmulShape shape) {
  const Eigen::MatrixXd a_global = random_matrix<double>(shape.m, shape.k, 3), b_global = random_matrix<double>(shape.k, shape.n, 4);
  const Eigen::MatrixXd want = a_global * b_global;
  const int ranks = M{}.size();
  std::vector<std::string> failures(static_cast<std::size_t>(ranks));
  std::vector<sw::Traffic> sent(static_cast<std::size_t>(ranks));
  LocalChecks quiet;
  sw::run_virtual_cluster(ranks, [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<M> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters));
    std::string& failure = failures[static_cast<std::size_t>(rank)];
    const auto a = sw::ShardedMatrix<double, M, typename Plan::a_sharding>::distribute(groups, a_global);
    const auto b = sw::ShardedMatrix<double, M, typename Plan::b_sharding>::distribute(groups, b_global);
    const sw::Traffic before = counters->total();
    const auto c = sw::matmul<typename Plan::c_sharding>(a, b, typename Plan::variant{});
    const sw::Traffic counted = counters->total() - before;
    sent[static_cast<std::size_t>(rank)] = counted;
    if (counted != Plan::plan::traffic(groups.mesh(), groups.coordinate(), shape, 8)) failure += "traffic differs from the model; ";
    if (relative_error(c.to_global(), want) > 1e-12) failure += "wrong product; ";
  });
  sw::Traffic busiest;
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(failures[static_cast<std::size_t>(r)], "") << "rank " << r;
    busiest = std::max(busiest, sent[static_cast<std::size_t>(r)]);
  }
  EXPECT_EQ(busiest, choice.traffic);
}

/// The footprint model against what a run really holds on each rank: the executor's scratch
/// (its Workspace, which only grows: the high-water mark of one fresh call) plus this rank's
/// blocks of A, B and C. The model must not be below it (but for the Workspace's rounding of
/// each buffer to 64 bytes), nor far above.
template <typename M, typename ShA, typename ShB, typename ShC, typename V>
void expect_footprint_holds(const std::string& name, sw::MatmulShape shape) {
  using Plan = sw::matmul_plan<M, ShA, ShB, ShC, V>;
  SCOPED_TRACE(name + ": " + Plan::describe());
  const Eigen::MatrixXd a_global = random_matrix<double>(shape.m, shape.k, 5), b_global = random_matrix<double>(shape.k, shape.n, 6);
  const int ranks = M{}.size();
  std::vector<std::int64_t> held(static_cast<std::size_t>(ranks)), asked(static_cast<std::size_t>(ranks)),
      modeled(static_cast<std::size_t>(ranks));
  LocalChecks quiet;
  sw::run_virtual_cluster(ranks, [&](sw::VirtualCommunicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    sw::ProcessGroupMesh<M> groups(std::move(comm));
    const auto a = sw::ShardedMatrix<double, M, ShA>::distribute(groups, a_global);
    const auto b = sw::ShardedMatrix<double, M, ShB>::distribute(groups, b_global);
    sw::detail::Workspace::local().release();
    const auto c = sw::matmul<ShC>(a, b, V{});
    const std::int64_t blocks =
        8 * (a.local_rows() * a.local_cols() + b.local_rows() * b.local_cols() + c.local_rows() * c.local_cols());
    held[r] = static_cast<std::int64_t>(sw::detail::Workspace::local().bytes_held()) + blocks;
    asked[r] = static_cast<std::int64_t>(sw::detail::Workspace::local().bytes_requested()) + blocks;
    modeled[r] = Plan::footprint_bytes(groups.mesh(), groups.coordinate(), shape, 8);
  });
  for (std::size_t r = 0; r < held.size(); ++r) {
    EXPECT_GE(modeled[r], asked[r]) << "rank " << r;
    EXPECT_LE(static_cast<double>(modeled[r]), 1.25 * static_cast<double>(held[r])) << "rank " << r;
  }
}

template <sw::fixed_string... N>
using S = sw::Split<N...>;
template <typename... D>
using TS = sw::TensorSharding<D...>;
using R = sw::Replicated;

}  // namespace

TEST(PlannedMatmul, FootprintModelHoldsWhatTheKernelsAllocate) {
  using Line = sw::Mesh<sw::Axis<"x", 4>>;
  constexpr sw::MatmulShape square{.m = 96, .k = 96, .n = 96}, uneven{.m = 50, .k = 37, .n = 20};
  // The planner's answers.
  expect_footprint_holds<Square, SquarePlan::a_sharding, SquarePlan::b_sharding, SquarePlan::c_sharding,
                         SquarePlan::variant>("2 x 2 planned", square_problem.shape);
  expect_footprint_holds<Oblong, OblongPlan::a_sharding, OblongPlan::b_sharding, OblongPlan::c_sharding,
                         OblongPlan::variant>("4 x 3 planned", oblong_problem.shape);
  expect_footprint_holds<Cube, CubePlan::a_sharding, CubePlan::b_sharding, CubePlan::c_sharding, CubePlan::variant>(
      "2 x 2 x 2 planned", cube_problem.shape);
  // 1-D: B gathered, on a ring, k split with C scattered (ring: three chunks).
  expect_footprint_holds<Line, TS<S<"x">, R>, TS<S<"x">, R>, TS<S<"x">, R>, sw::variant::Standard>("1-D gather", square);
  expect_footprint_holds<Line, TS<S<"x">, R>, TS<S<"x">, R>, TS<S<"x">, R>, sw::variant::Ring>("1-D ring", uneven);
  expect_footprint_holds<Line, TS<R, S<"x">>, TS<S<"x">, R>, TS<S<"x">, R>, sw::variant::Ring>("1-D ring scatter", square);
  // 2-D: both gathered (B, column-major, gathered along its rows: packed in place), SUMMA.
  expect_footprint_holds<Square, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, sw::variant::Standard>(
      "2-D gather both", uneven);
  expect_footprint_holds<Square, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, sw::variant::Summa<>>(
      "SUMMA", square);
  // 3-D and 2.5D from operands stored once.
  using A3 = TS<S<"x">, S<"z", "y">>;
  using B3 = TS<S<"z", "x">, S<"y">>;
  using C3 = TS<S<"x">, S<"y", "z">>;
  expect_footprint_holds<Cube, A3, B3, C3, sw::variant::Via<TS<S<"x">, S<"z">>, TS<S<"z">, S<"y">>>>("3-D", uneven);
  using AL = TS<S<"x">, S<"y", "z">>;
  using BL = TS<S<"x", "z">, S<"y">>;
  using G = TS<S<"x">, S<"y">>;
  expect_footprint_holds<Cube, AL, BL, AL, sw::variant::Via<G, G, sw::variant::Summa25D<"z">>>("2.5D", square);
}

TEST(PlannedMatmul, RunsOnTheVirtualCluster) {
  expect_runs<Square, SquarePlan>(square_choice, square_problem.shape);
  expect_runs<Oblong, OblongPlan>(oblong_choice, oblong_problem.shape);
  expect_runs<Cube, CubePlan>(cube_choice, cube_problem.shape);
  expect_runs<Sparse, SparsePlan>(sparse_choice, sparse_problem.shape);
  expect_runs<Single, SinglePlan>(single_choice, sparse_problem.shape);
}

TEST(PlannedMatmul, LargeMeshesPlanAtCompileTime) {
  // The answers as types on 4096 ranks, and the same as the planner's at run time.
  EXPECT_EQ(sw::plan_matmul(BigCube{}, big_cube_problem).traffic, big_cube_choice.traffic);
  EXPECT_EQ(sw::plan_matmul(BigCube{}, big_cube_tight).footprint_bytes, big_cube_tight_choice.footprint_bytes);
  EXPECT_TRUE((sw::valid_matmul<BigCube, BigCubeTightPlan::a_sharding, BigCubeTightPlan::b_sharding,
                                BigCubeTightPlan::c_sharding, BigCubeTightPlan::variant>));
  EXPECT_TRUE((sw::valid_matmul<BigCube, BigCubeUnevenPlan::a_sharding, BigCubeUnevenPlan::b_sharding,
                                BigCubeUnevenPlan::c_sharding, BigCubeUnevenPlan::variant>));
  EXPECT_TRUE((sw::valid_matmul<BigSquare, BigSquarePlan::a_sharding, BigSquarePlan::b_sharding,
                                BigSquarePlan::c_sharding, BigSquarePlan::variant>));
}
