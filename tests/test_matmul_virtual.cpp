// matmul on the virtual cluster: every case against serial Eigen and every rank's traffic
// against the cost model; a randomized differential test; the cluster's own channel counts;
// Partial and reduce; bad input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>

#include "matmul_cases.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

/// Turns the cross-rank shape check off while counting (it adds one small all-reduce).
struct NoShapeChecks {
  NoShapeChecks() { sw::cross_rank_shape_checks() = false; }
  ~NoShapeChecks() { sw::cross_rank_shape_checks() = true; }
  NoShapeChecks(const NoShapeChecks&) = delete;
  NoShapeChecks& operator=(const NoShapeChecks&) = delete;
};

std::string case_label(const std::string& name, int ranks, sw::MatmulShape shape, std::uint64_t seed) {
  return name + " on " + std::to_string(ranks) + " ranks, m=" + std::to_string(shape.m) + " k=" +
         std::to_string(shape.k) + " n=" + std::to_string(shape.n) + ", seed " + std::to_string(seed);
}

/// Runs `c` on every rank of a virtual cluster over `mesh` with a counting communicator.
template <typename M>
std::vector<CaseResult> run_on_cluster(const PlanCase<M>& c, const M& mesh, sw::MatmulShape shape, std::uint64_t seed) {
  NoShapeChecks quiet;
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

constexpr sw::MatmulShape even{16, 24, 32};
constexpr sw::MatmulShape uneven{13, 19, 11};
constexpr sw::MatmulShape tiny{3, 2, 5};  // fewer rows than ranks: some blocks are empty

}  // namespace

TEST(MatmulVirtual, LineEveryShardingOutputAndVariant) {
  const auto cases = line_cases_fp64();
  EXPECT_GE(cases.size(), 20u);
  for (int ranks : {1, 2, 3, 4}) run_all(cases, Line{ranks}, {even, uneven, tiny});
}

TEST(MatmulVirtual, LineFloat) {
  for (int ranks : {2, 3}) run_all(line_cases_fp32(), Line{ranks}, {even, uneven});
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
  const auto line = line_cases_fp64(), line32 = line_cases_fp32();
  const auto grid = grid_cases_fp64(), grid32 = grid_cases_fp32();
  const auto cube = cube_cases_fp64();
  constexpr int cases = 500;
  for (int i = 0; i < cases; ++i) {
    // Extents 0..19, with empty dimensions now and then.
    const sw::MatmulShape shape{pick(0, 19), pick(0, 19), pick(1, 19)};
    const std::uint64_t case_seed = draw();
    SCOPED_TRACE("case " + std::to_string(i) + " of the run with SHARDWISE_TEST_SEED=" + std::to_string(seed));
    switch (pick(0, 9)) {
      case 0: case 1: expect_case(line[draw() % line.size()], Line{pick(1, 6)}, shape, case_seed); break;
      case 2: expect_case(line32[draw() % line32.size()], Line{pick(1, 5)}, shape, case_seed); break;
      case 3: case 4: case 5: case 6:
        expect_case(grid[draw() % grid.size()], Grid{pick(1, 3), pick(1, 3)}, shape, case_seed);
        break;
      case 7: expect_case(grid32[draw() % grid32.size()], Grid{pick(1, 3), pick(1, 3)}, shape, case_seed); break;
      default: expect_case(cube[draw() % cube.size()], Cube{pick(1, 2), pick(1, 3), pick(1, 2)}, shape, case_seed); break;
    }
    if (::testing::Test::HasFailure()) break;  // the first failure is the useful one
  }
}
