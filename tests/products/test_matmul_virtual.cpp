// matmul on the virtual cluster: every case against serial Eigen and every rank's traffic
// against the cost model; a randomized differential test; the cluster's own channel counts;
// Partial and reduce; bad input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>

#include "local_checks.hpp"
#include "matmul_cases.hpp"
#include "shardwise/comm/virtual_cluster.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

std::string case_label(const std::string& name, int ranks, sw::MatmulShape shape, std::uint64_t seed) {
  return name + " on " + std::to_string(ranks) + " ranks, m=" + std::to_string(shape.m) + " k=" +
         std::to_string(shape.k) + " n=" + std::to_string(shape.n) + ", seed " + std::to_string(seed);
}

/// Runs `c` on every rank of a virtual cluster over `mesh` with a counting communicator.
template <typename M>
std::vector<CaseResult> run_on_cluster(const PlanCase<M>& c, const M& mesh, sw::MatmulShape shape, std::uint64_t seed) {
  LocalChecks quiet;
  std::vector<CaseResult> results(static_cast<std::size_t>(mesh.size()));
  sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<M> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters), mesh);
    results[static_cast<std::size_t>(rank)] = c.run(groups, shape, seed, counters.get());
  });
  return results;
}

/// Error within tolerance, the block of the right size, measured traffic == model, on every rank.
template <typename M>
void expect_case(const PlanCase<M>& c, const M& mesh, sw::MatmulShape shape, std::uint64_t seed) {
  SCOPED_TRACE(case_label(c.name, mesh.size(), shape, seed));
  const auto results = run_on_cluster(c, mesh, shape, seed);
  for (std::size_t r = 0; r < results.size(); ++r) {
    const CaseResult& result = results[r];
    EXPECT_LE(result.error, result.tolerance) << "rank " << r;
    EXPECT_LE(result.gemm_error, result.tolerance) << "rank " << r << ": gemm(alpha, A, B, beta, C)";
    EXPECT_EQ(result.gemm_measured, result.modeled) << "rank " << r << ": gemm's traffic";
    EXPECT_LE(result.op_error, result.tolerance) << "rank " << r << ": gemm(alpha, adjoint(Ah), transposed(Bt), beta, C)";
    EXPECT_EQ(result.op_measured, result.modeled) << "rank " << r << ": the traffic of gemm on adjoint and transposed";
    EXPECT_TRUE(result.local_shape_ok) << "rank " << r;
    EXPECT_EQ(result.measured, result.modeled) << "rank " << r << ": measured " << result.measured.bytes
                                               << " B / " << result.measured.messages << " messages, modeled "
                                               << result.modeled.bytes << " B / " << result.modeled.messages;
  }
}

template <typename M>
void run_all(const std::vector<PlanCase<M>>& cases, const M& mesh, std::initializer_list<sw::MatmulShape> shapes) {
  std::uint64_t seed = 1;
  for (const auto& c : cases)
    for (const auto& shape : shapes) expect_case(c, mesh, shape, seed++);
}

constexpr sw::MatmulShape even{.m = 16, .k = 24, .n = 32};
constexpr sw::MatmulShape uneven{.m = 13, .k = 19, .n = 11};
constexpr sw::MatmulShape tiny{.m = 3, .k = 2, .n = 5};  // fewer rows than ranks: some blocks are empty

}  // namespace

TEST(MatmulVirtual, LineEveryShardingOutputAndVariant) {
  const auto cases = line_cases_fp64();
  EXPECT_GE(cases.size(), 20u);
  for (int ranks : {1, 2, 3, 4}) run_all(cases, Line{ranks}, {even, uneven, tiny});
}

TEST(MatmulVirtual, LineFloat) {
  for (int ranks : {2, 3}) run_all(line_cases_fp32(), Line{ranks}, {even, uneven});
}

TEST(MatmulVirtual, LineAndGridComplex) {
  const auto cases = line_cases_complex();
  EXPECT_GE(cases.size(), 20u);
  for (int ranks : {2, 3}) run_all(cases, Line{ranks}, {even, uneven});
  run_all(grid_cases_complex(), Grid{2, 3}, {even, uneven});
}

TEST(MatmulVirtual, GridSeedCasesAndFamilies) {
  const auto cases = grid_cases_fp64();
  run_all(cases, Grid{2, 4}, {even, uneven});
  run_all(cases, Grid{3, 2}, {uneven, tiny});
}

TEST(MatmulVirtual, GridFloat) {
  run_all(grid_cases_fp32(), Grid{2, 4}, {even, uneven});
  run_all(grid_cases_fp32(), Grid{2, 3}, {uneven});
}

TEST(MatmulVirtual, TwoAndAHalfDAt8And27And64Ranks) {
  std::vector<PlanCase<Cube>> cases;
  add_25d_cases(cases);
  run_all(cases, Cube{2, 2, 2}, {even, uneven});
  run_all(cases, Cube{3, 3, 3}, {uneven, {.m = 27, .k = 27, .n = 27}});
  run_all(cases, Cube{4, 4, 4}, {{.m = 64, .k = 48, .n = 80}});
}

TEST(MatmulVirtual, CubeFamilies) {
  const auto cases = cube_cases_fp64();
  run_all(cases, Cube{2, 2, 2}, {even, uneven});
  run_all(cases, Cube{1, 3, 2}, {uneven});
}

// ---- randomized differential test ------------------------------------------------------

TEST(MatmulVirtual, RandomizedDifferential) {
  // SHARDWISE_TEST_SEED=<n> reproduces a run; every failure names its case and seed.
  const char* given = std::getenv("SHARDWISE_TEST_SEED");
  const std::uint64_t seed = given ? std::strtoull(given, nullptr, 10) : 20261122;
  std::printf("randomized differential test: seed %llu (set SHARDWISE_TEST_SEED to change)\n",
              static_cast<unsigned long long>(seed));
  std::mt19937_64 draw(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(draw); };
  const auto line = line_cases_fp64(), line32 = line_cases_fp32(), line_complex = line_cases_complex();
  const auto grid = grid_cases_fp64(), grid32 = grid_cases_fp32(), grid_complex = grid_cases_complex();
  const auto cube = cube_cases_fp64(), cube_complex = cube_cases_complex();
  // What was drawn, by scalar kind (real, complex) and variant: each must have come up.
  const char* const variants[] = {" standard: ", " ring: ", " summa: ", " summa_25d: "};
  int drawn[2][4] = {};
  auto run = [&](const auto& pool, const auto& mesh, sw::MatmulShape shape, std::uint64_t case_seed) {
    const auto& c = pool[draw() % pool.size()];
    const int kind = c.name.rfind("complex", 0) == 0 ? 1 : 0;
    for (int v = 0; v < 4; ++v) drawn[kind][v] += c.name.find(variants[v]) != std::string::npos;
    expect_case(c, mesh, shape, case_seed);
  };
  // About 500 real cases (as many as before complex ones were drawn) and 250 complex ones.
  constexpr int cases = 750;
  for (int i = 0; i < cases; ++i) {
    // Extents 0..19, with empty dimensions now and then.
    const sw::MatmulShape shape{.m = pick(0, 19), .k = pick(0, 19), .n = pick(1, 19)};
    const std::uint64_t case_seed = draw();
    SCOPED_TRACE("case " + std::to_string(i) + " of the run with SHARDWISE_TEST_SEED=" + std::to_string(seed));
    switch (pick(0, 14)) {
      case 0: case 1: run(line, Line{pick(1, 6)}, shape, case_seed); break;
      case 2: run(line32, Line{pick(1, 5)}, shape, case_seed); break;
      case 3: case 4: case 5: case 6: run(grid, Grid{pick(1, 3), pick(1, 3)}, shape, case_seed); break;
      case 7: run(grid32, Grid{pick(1, 3), pick(1, 3)}, shape, case_seed); break;
      case 8: case 9: run(cube, Cube{pick(1, 2), pick(1, 3), pick(1, 2)}, shape, case_seed); break;
      // complex<double> and complex<float>: the line's every output and variant, the grid's
      // seed cases, SUMMA and ring, and 2.5D on layers
      case 10: case 11: run(line_complex, Line{pick(1, 6)}, shape, case_seed); break;
      case 12: case 13: run(grid_complex, Grid{pick(1, 3), pick(1, 3)}, shape, case_seed); break;
      default: run(cube_complex, Cube{pick(1, 2), pick(1, 3), pick(1, 2)}, shape, case_seed); break;
    }
    if (::testing::Test::HasFailure()) return;  // the first failure is the useful one
  }
  for (int kind = 0; kind < 2; ++kind)
    for (int v = 0; v < 4; ++v)
      EXPECT_GT(drawn[kind][v], 0) << (kind ? "complex" : "real") << " cases with the variant '" << variants[v]
                                   << "' were never drawn";
}

// ---- both GEMM backends --------------------------------------------------------------------
// The test programs are built with SHARDWISE_EIGEN_GEMM=1, so a BLAS build has Eigen's kernel
// too; every case above ran with the default (BLAS when there is one).

TEST(MatmulVirtual, EigenKernelOnEveryGridAndLineCase) {
  static_assert(sw::has_eigen_backend, "tests/meson.build builds the matmul tests with SHARDWISE_EIGEN_GEMM=1");
  struct Restore {
    sw::GemmBackend before = sw::gemm_backend();
    ~Restore() { sw::set_gemm_backend(before); }
  } restore;
  sw::set_gemm_backend(sw::GemmBackend::eigen);
  run_all(grid_cases_fp64(), Grid{2, 3}, {uneven});
  run_all(line_cases_fp32(), Line{3}, {uneven});
}

// ---- the cluster's own channels: real messages, counted where they are delivered ---------

namespace {

/// Measures, on the cluster's channels, what every rank sends during one (warm) matmul.
template <typename ShA, typename ShB, typename ShC = sw::NaturalOutput, typename V = sw::variant::Standard, typename M>
void expect_channels_match_model(const M& mesh, sw::MatmulShape shape) {
  using Plan = sw::matmul_plan<M, ShA, ShB, ShC, V>;
  SCOPED_TRACE(Plan::describe() + " on " + std::to_string(mesh.size()) + " ranks");
  LocalChecks quiet;
  sw::VirtualCluster cluster(mesh.size());
  std::vector<sw::Traffic> sent(static_cast<std::size_t>(mesh.size()));
  cluster.run([&](sw::VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<M> groups(std::move(comm), mesh);
    const auto a = sw::ShardedMatrix<double, M, ShA>::distribute(groups, random_matrix<double>(shape.m, shape.k, 1));
    const auto b = sw::ShardedMatrix<double, M, ShB>::distribute(groups, random_matrix<double>(shape.k, shape.n, 2));
    (void)sw::matmul<ShC>(a, b, V{});  // creates the groups the schedule needs
    groups.world().barrier();          // barriers send no messages
    if (groups.rank() == 0) cluster.reset_stats();
    groups.world().barrier();
    (void)sw::matmul<ShC>(a, b, V{});
    groups.world().barrier();
    if (groups.rank() == 0)
      for (int r = 0; r < mesh.size(); ++r) sent[static_cast<std::size_t>(r)] = cluster.sent_by(r);
    groups.world().barrier();
  });
  for (int r = 0; r < mesh.size(); ++r) {
    const sw::Traffic modeled = Plan::traffic(mesh, mesh.unravel(r), shape, sizeof(double));
    EXPECT_EQ(sent[static_cast<std::size_t>(r)], modeled)
        << "rank " << r << ": channels saw " << sent[static_cast<std::size_t>(r)].bytes << " B / "
        << sent[static_cast<std::size_t>(r)].messages << " messages, modeled " << modeled.bytes << " B / "
        << modeled.messages;
  }
}

}  // namespace

TEST(MatmulVirtual, ChannelCountsEqualTheModel) {
  const Grid grid{2, 4};
  for (sw::MatmulShape shape : {even, uneven}) {
    // The seed's cases.
    expect_channels_match_model<TS<R, S<"y">>, TS<S<"y">, R>, Rep>(grid, shape);
    expect_channels_match_model<TS<R, S<"x", "y">>, TS<S<"x", "y">, R>, Rep>(grid, shape);
    expect_channels_match_model<TS<R, S<"y">>, TS<S<"x">, R>, Rep>(grid, shape);
    expect_channels_match_model<TS<S<"x">, S<"y">>, TS<S<"x">, R>, Rep>(grid, shape);
    expect_channels_match_model<TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, Rep>(grid, shape);
    // Natural outputs, a ReduceScatter, the ring variants and SUMMA.
    expect_channels_match_model<TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>>(grid, shape);
    expect_channels_match_model<TS<R, S<"y">>, TS<S<"y">, R>, TS<S<"y">, R>>(grid, shape);
    expect_channels_match_model<TS<R, S<"y">>, TS<S<"y">, R>, TS<S<"y">, R>, sw::variant::Ring>(grid, shape);
    expect_channels_match_model<TS<S<"x">, R>, TS<S<"y">, R>, sw::NaturalOutput, sw::variant::Ring>(grid, shape);
    expect_channels_match_model<TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, sw::NaturalOutput, sw::variant::Summa<5>>(grid, shape);
  }
}

// ---- Partial outputs, reduce, reshard -----------------------------------------------------

TEST(MatmulVirtual, PartialOutputThenReduceEqualsTheReducedProduct) {
  const Grid mesh{2, 3};
  sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Grid> groups(std::move(comm), mesh);
    const auto a_global = random_matrix<double>(11, 13, 5), b_global = random_matrix<double>(13, 7, 6);
    const auto a = sw::ShardedMatrix<double, Grid, TS<S<"x">, S<"y">>>::distribute(groups, a_global);
    const auto b = sw::ShardedMatrix<double, Grid, TS<S<"y">, R>>::distribute(groups, b_global);
    auto pending = sw::matmul<TS<S<"x">, R, P<"y">>>(a, b);  // no communication at all
    static_assert(decltype(pending)::sharding::is_partial);
    const auto reduced = sw::reduce(pending);                       // AllReduce over y
    const auto scattered = sw::reduce<TS<S<"x">, S<"y">>>(pending);  // ReduceScatter over y
    static_assert(std::is_same_v<decltype(reduced)::sharding, TS<S<"x">, R>>);
    const Eigen::MatrixXd want = a_global * b_global;
    if (relative_error(reduced.to_global(), want) > 1e-12) throw std::runtime_error("reduce() is wrong");
    if (relative_error(scattered.to_global(), want) > 1e-12) throw std::runtime_error("reduce<Split>() is wrong");
    if (relative_error(pending.to_global(), want) > 1e-12) throw std::runtime_error("to_global() of a Partial is wrong");
    // Gathering minor axes only: (x,y) rows back to x rows.
    const auto fine = sw::ShardedMatrix<double, Grid, TS<S<"x", "y">, R>>::distribute(groups, want);
    const auto coarse = sw::reshard<TS<S<"x">, R>>(fine);
    if (coarse.to_global() != want) throw std::runtime_error("reshard() is wrong");  // data movement only: exact
  });
}

// ---- bad input: a clear exception on every rank, never a hang --------------------------------

namespace {

/// Runs f on every rank of a cluster and expects each rank to throw E.
template <typename E, typename F>
void expect_every_rank_throws(int ranks, F f) {
  std::vector<int> threw(static_cast<std::size_t>(ranks), 0);
  sw::run_virtual_cluster(ranks, [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    try {
      f(comm);
    } catch (const E&) {
      threw[static_cast<std::size_t>(rank)] = 1;
    }
  });
  for (int r = 0; r < ranks; ++r) EXPECT_TRUE(threw[static_cast<std::size_t>(r)]) << "rank " << r << " did not throw";
}

}  // namespace

TEST(MatmulVirtual, InnerDimensionsThatDisagree) {
  expect_every_rank_throws<std::invalid_argument>(4, [](sw::VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Line> groups(std::move(comm), Line{4});
    const auto a = sw::ShardedMatrix<double, Line, TS<S<"x">, R>>::distribute(groups, random_matrix<double>(8, 5, 1));
    const auto b = sw::ShardedMatrix<double, Line, TS<R, R>>::distribute(groups, random_matrix<double>(6, 3, 2));
    (void)sw::matmul(a, b);
  });
}

TEST(MatmulVirtual, ShapesThatDifferAcrossRanks) {
  // distribute() refuses ...
  expect_every_rank_throws<std::invalid_argument>(3, [](sw::VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Line> groups(std::move(comm), Line{3});
    (void)sw::ShardedMatrix<double, Line, TS<S<"x">, R>>::distribute(
        groups, random_matrix<double>(6 + groups.rank(), 5, 1));
  });
  // ... and matmul checks again, for matrices that slipped through with the check off.
  expect_every_rank_throws<std::invalid_argument>(3, [](sw::VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Line> groups(std::move(comm), Line{3});
    std::optional<sw::ShardedMatrix<double, Line, TS<R, R>>> a;
    sw::check_level() = sw::CheckLevel::local;
    groups.world().barrier();
    a.emplace(sw::ShardedMatrix<double, Line, TS<R, R>>::distribute(groups, random_matrix<double>(4, 4 + groups.rank(), 1)));
    groups.world().barrier();
    sw::check_level() = sw::CheckLevel::cross_rank;  // shared by the rank threads: set it between barriers
    groups.world().barrier();
    const auto b = sw::ShardedMatrix<double, Line, TS<R, R>>::distribute(groups, random_matrix<double>(4, 4, 2));
    (void)sw::matmul(*a, b);
  });
}

TEST(MatmulVirtual, OperandsOnDifferentGroupMeshes) {
  expect_every_rank_throws<std::invalid_argument>(2, [](sw::VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Line> first(comm, Line{2});  // from an lvalue: a duplicate
    sw::ProcessGroupMesh<Line> second(std::move(comm), Line{2});
    const auto a = sw::ShardedMatrix<double, Line, TS<S<"x">, R>>::distribute(first, random_matrix<double>(4, 3, 1));
    const auto b = sw::ShardedMatrix<double, Line, TS<R, R>>::distribute(second, random_matrix<double>(3, 2, 2));
    (void)sw::matmul(a, b);
  });
}

TEST(MatmulVirtual, ARankThatThrowsMidScheduleStopsTheOthers) {
  // Rank 1 fails before its collectives; the others must not wait for it forever.
  EXPECT_THROW(sw::run_virtual_cluster(4,
                                       [](sw::VirtualCommunicator& comm) {
                                         sw::ProcessGroupMesh<Line> groups(std::move(comm), Line{4});
                                         const auto a = sw::ShardedMatrix<double, Line, TS<R, S<"x">>>::distribute(
                                             groups, random_matrix<double>(6, 8, 1));
                                         const auto b = sw::ShardedMatrix<double, Line, TS<S<"x">, R>>::distribute(
                                             groups, random_matrix<double>(8, 6, 2));
                                         if (groups.rank() == 1) throw std::runtime_error("rank 1 gives up");
                                         (void)sw::matmul(a, b);
                                       }),
               sw::RemoteRankFailure);
}

// ---- the sharding planner's answer run as types, and a memory budget ----------------------------

TEST(MatmulVirtual, PlannedShardingsRunAndBudgetsCheckTheShape) {
  using Pair = sw::Mesh<sw::Axis<"x", 2>>;
  static constexpr sw::MatmulChoice choice = sw::plan_matmul(Pair{}, {{.m = 12, .k = 14, .n = 10}, 8, 4096});
  using Planned = sw::planned_matmul<Pair, choice>;
  constexpr sw::MatmulShape shape{.m = 12, .k = 14, .n = 10};
  const Eigen::MatrixXd a_global = random_matrix<double>(12, 14, 3), b_global = random_matrix<double>(14, 10, 4);
  const Eigen::MatrixXd want = a_global * b_global;
  std::vector<std::string> failures(2);
  LocalChecks quiet;
  sw::run_virtual_cluster(2, [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<Pair> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters));
    std::string& failure = failures[static_cast<std::size_t>(rank)];
    const auto a = sw::ShardedMatrix<double, Pair, Planned::a_sharding>::distribute(groups, a_global);
    const auto b = sw::ShardedMatrix<double, Pair, Planned::b_sharding>::distribute(groups, b_global);
    const sw::Traffic before = counters->total();
    const auto c = sw::matmul<Planned::c_sharding>(a, b, Planned::variant{}, sw::memory_budget<shape, 4096>);
    const sw::Traffic sent = counters->total() - before;
    if (sent != Planned::plan::traffic(groups.mesh(), groups.coordinate(), shape, 8)) failure += "traffic differs; ";
    if (relative_error(c.to_global(), want) > 1e-12) failure += "wrong product; ";
    // The budget was checked for 12 x 14 times 14 x 10: other operands are refused.
    const auto other = sw::ShardedMatrix<double, Pair, Planned::a_sharding>::distribute(groups, random_matrix<double>(12, 14, 5));
    const auto small = sw::ShardedMatrix<double, Pair, Planned::b_sharding>::distribute(groups, random_matrix<double>(14, 9, 6));
    try {
      (void)sw::matmul<Planned::c_sharding>(other, small, Planned::variant{}, sw::memory_budget<shape, 4096>);
      failure += "no error for another shape; ";
    } catch (const std::invalid_argument& e) {
      if (std::string(e.what()) !=
          "shardwise::matmul: the memory budget was checked for m = 12, k = 14, n = 10 but A is 12 x 14 and B is 14 x 9")
        failure += std::string("unexpected text: ") + e.what();
    }
  });
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
  EXPECT_TRUE(choice.found);
  EXPECT_LE(choice.footprint_bytes, 4096);
}

// ---- a sliced input or a gathered one, chosen per call from the extents -------------------------

namespace {

/// Every rank's bytes counted and modeled, and the largest error of C, for one matmul of
/// operands sharded ShA and ShB and shaped `s`, on a virtual cluster over `mesh`.
struct ChosenRun {
  std::vector<sw::Traffic> counted, modeled;
  double error = 0;
};
template <typename ShA, typename ShB, typename M>
ChosenRun run_chosen(const M& mesh, sw::MatmulShape s) {
  const Eigen::MatrixXd a = random_matrix<double>(s.m, s.k, 7), b = random_matrix<double>(s.k, s.n, 8);
  const Eigen::MatrixXd want = a * b;
  ChosenRun run;
  run.counted.resize(static_cast<std::size_t>(mesh.size()));
  run.modeled.resize(static_cast<std::size_t>(mesh.size()));
  std::vector<double> errors(static_cast<std::size_t>(mesh.size()));
  LocalChecks quiet;
  sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<M> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters), mesh);
    const auto sa = sw::ShardedMatrix<double, M, ShA>::distribute(groups, a);
    const auto sb = sw::ShardedMatrix<double, M, ShB>::distribute(groups, b);
    const sw::Traffic before = counters->total();
    const auto c = sw::matmul(sa, sb);
    run.counted[r] = counters->total() - before;
    run.modeled[r] = sw::matmul_plan<M, ShA, ShB>::traffic(mesh, groups.coordinate(), s, sizeof(double));
    errors[r] = relative_error(c.to_global(), want);
  });
  for (double e : errors) run.error = std::max(run.error, e);
  return run;
}

void expect_counted_equals_modeled(const ChosenRun& run) {
  EXPECT_LE(run.error, 1e-12);
  for (std::size_t r = 0; r < run.counted.size(); ++r)
    EXPECT_EQ(run.counted[r], run.modeled[r]) << "rank " << r << ": counted " << run.counted[r].bytes << " B / "
                                              << run.counted[r].messages << " messages, modeled "
                                              << run.modeled[r].bytes << " B / " << run.modeled[r].messages;
}

using ColumnSplit = TS<R, S<"x">>;
using SliceOrGather = sw::matmul_plan<Line, ColumnSplit, Rep>;
// A[-, x] * B[-, -]: slice B along k (0 bytes) -> local GEMM -> AllReduce C, or AllGather A
// along k -> local GEMM (the plan before slices existed). Both are kept; the extents choose.
static_assert(SliceOrGather::has_alternative);
static_assert(SliceOrGather::schedule.size() == 3 &&
              SliceOrGather::schedule[0] == sw::Step{sw::StepKind::slice, sw::Operand::B, 0, {0}, {}} &&
              SliceOrGather::schedule[2].kind == sw::StepKind::all_reduce);
static_assert(SliceOrGather::alternative_schedule.size() == 2 &&
              SliceOrGather::alternative_schedule[0] == sw::Step{sw::StepKind::all_gather, sw::Operand::A, 1, {0}, {}} &&
              SliceOrGather::alternative_schedule[1].kind == sw::StepKind::local_gemm);
// Both end at the same output; a plan that slices nothing has no alternative.
static_assert(std::is_same_v<SliceOrGather::output_sharding, Rep>);
static_assert(!sw::matmul_plan<Line, ColumnSplit, TS<S<"x">, R>>::has_alternative);
static_assert(!sw::matmul_plan<Line, ColumnSplit, Rep, sw::NaturalOutput, sw::variant::Ring>::has_alternative);
// The choice is constexpr: square on 4 ranks gathers, a matrix times a vector slices.
static_assert(SliceOrGather::uses_alternative(Line{4}, {.m = 12, .k = 12, .n = 12}, 8));
static_assert(!SliceOrGather::uses_alternative(Line{4}, {.m = 12, .k = 12, .n = 1}, 8));

// The 2 x 2 power iteration: matmul(A[x, y], v[-, -]).
using Square2 = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using PowerProduct = sw::matmul_plan<Square2, TS<S<"x">, S<"y">>, Rep>;
static_assert(PowerProduct::has_alternative);

}  // namespace

TEST(MatmulVirtual, SliceOrGatherChosenFromTheExtents) {
  EXPECT_EQ(SliceOrGather::describe(), "UnmatchedInner: slice B along k over x -> local GEMM -> AllReduce C over x => C[-, -]");
  EXPECT_EQ(SliceOrGather::describe_choice(),
            "UnmatchedInner: slice B along k over x -> local GEMM -> AllReduce C over x => C[-, -]; or, when its "
            "busiest rank sends no more bytes for the extents, AllGather A along k over x -> local GEMM");
  for (int ranks : {2, 3, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const Line line{ranks};
    // Square: the gather, (P - 1)/P n^2 words per rank as before slices (the AllReduce of C
    // would send twice that).
    constexpr sw::MatmulShape square{.m = 12, .k = 12, .n = 12};
    EXPECT_TRUE(SliceOrGather::uses_alternative(line, square, 8));
    const std::int64_t gather_bytes = (ranks - 1) * (12 * 12 / ranks) * 8;
    EXPECT_EQ(SliceOrGather::max_traffic(line, square, 8).bytes, gather_bytes);
    ChosenRun run = run_chosen<ColumnSplit, Rep>(line, square);
    expect_counted_equals_modeled(run);
    for (const sw::Traffic& t : run.counted) EXPECT_EQ(t.bytes, gather_bytes);
    // A matrix times a vector (n = 1): the slice, an AllReduce of n words.
    constexpr sw::MatmulShape matvec{.m = 12, .k = 12, .n = 1};
    EXPECT_FALSE(SliceOrGather::uses_alternative(line, matvec, 8));
    const std::int64_t reduce_bytes = 2 * (ranks - 1) * (12 / ranks) * 8;
    EXPECT_EQ(SliceOrGather::max_traffic(line, matvec, 8).bytes, reduce_bytes);
    run = run_chosen<ColumnSplit, Rep>(line, matvec);
    expect_counted_equals_modeled(run);
    for (const sw::Traffic& t : run.counted) EXPECT_EQ(t.bytes, reduce_bytes);
    // Uneven and thin-but-not-a-vector shapes: whichever is chosen, counted == modeled.
    for (sw::MatmulShape s : {sw::MatmulShape{.m = 13, .k = 13, .n = 13}, sw::MatmulShape{.m = 13, .k = 13, .n = 1}, sw::MatmulShape{.m = 40, .k = 9, .n = 3},
                              sw::MatmulShape{.m = 3, .k = 9, .n = 40}, sw::MatmulShape{.m = 2, .k = 3, .n = 5}})
      expect_counted_equals_modeled(run_chosen<ColumnSplit, Rep>(line, s));
  }
}

TEST(MatmulVirtual, PowerIterationSlicesTheVector) {
  // n = 3000 on 2 x 2: the slice sends 12 KB per rank (an AllReduce of C's 1500 x 1 block over
  // y), the gather of A along k over y would send 18 MB.
  constexpr sw::MatmulShape shape{.m = 3000, .k = 3000, .n = 1};
  EXPECT_FALSE(PowerProduct::uses_alternative(Square2{}, shape, 8));
  EXPECT_EQ(PowerProduct::max_traffic(Square2{}, shape, 8).bytes, 12'000);
  const sw::Traffic gather = sw::detail::max_over_ranks(Square2{}, [&](const auto& at) {
    return sw::detail::schedule_traffic(PowerProduct::alternative_schedule, PowerProduct::alternative_state(),
                                        sw::detail::matmul_extents(shape), sw::detail::block_geometry(Square2{}, at), 8,
                                        0);
  });
  EXPECT_EQ(gather.bytes, 18'000'000);
  // Counted == modeled for the vector (the slice) and for a square B (the gather) on the grid.
  EXPECT_FALSE(PowerProduct::uses_alternative(Square2{}, {.m = 30, .k = 30, .n = 1}, 8));
  expect_counted_equals_modeled(run_chosen<TS<S<"x">, S<"y">>, Rep>(Square2{}, {.m = 30, .k = 30, .n = 1}));
  EXPECT_TRUE(PowerProduct::uses_alternative(Square2{}, {.m = 30, .k = 30, .n = 30}, 8));
  expect_counted_equals_modeled(run_chosen<TS<S<"x">, S<"y">>, Rep>(Square2{}, {.m = 30, .k = 30, .n = 30}));
  expect_counted_equals_modeled(run_chosen<TS<S<"x">, S<"y">>, Rep>(Square2{}, {.m = 7, .k = 5, .n = 2}));
}
