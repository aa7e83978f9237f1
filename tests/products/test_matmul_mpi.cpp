// matmul under mpiexec (run with 2, 4 and 8 ranks): every pooled case against serial
// Eigen, every rank's traffic (CountingCommunicator over MPI) against the cost model, a
// randomized sample, and bad input. Verdicts are all-reduced so every rank asserts the same.
#include <gtest/gtest.h>
#include <mpi.h>

#include <random>

#include "local_checks.hpp"
#include "matmul_cases.hpp"
#include "mpi_support.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

/// Runs one case on every rank; the worst error and whether every rank's traffic matched.
template <typename M>
void expect_case(CountedGroups<M>& g, const PlanCase<M>& c, sw::MatmulShape shape, std::uint64_t seed) {
  LocalChecks quiet;
  const CaseResult r = c.run(g.groups, shape, seed, g.counters.get());
  double worst_error[3] = {r.error, r.gemm_error, r.op_error};
  int all_ok[4] = {r.local_shape_ok ? 1 : 0, r.measured == r.modeled ? 1 : 0, r.gemm_measured == r.modeled ? 1 : 0,
                   r.op_measured == r.modeled ? 1 : 0};
  MPI_Allreduce(MPI_IN_PLACE, worst_error, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, all_ok, 4, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  SCOPED_TRACE(c.name + " on " + std::to_string(world_size()) + " ranks, m=" + std::to_string(shape.m) +
               " k=" + std::to_string(shape.k) + " n=" + std::to_string(shape.n) + ", seed " + std::to_string(seed));
  EXPECT_LE(worst_error[0], r.tolerance);
  EXPECT_LE(worst_error[1], r.tolerance) << "gemm(alpha, A, B, beta, C)";
  EXPECT_LE(worst_error[2], r.tolerance) << "gemm(alpha, adjoint(Ah), transposed(Bt), beta, C)";
  EXPECT_TRUE(all_ok[3]) << "a rank's traffic in gemm on adjoint and transposed operands differs from the model";
  EXPECT_TRUE(all_ok[0]) << "a rank's block has the wrong size";
  EXPECT_TRUE(all_ok[2]) << "a rank's gemm traffic differs from the model";
  EXPECT_TRUE(all_ok[1]) << "a rank's traffic differs from the model; this rank measured " << r.measured.bytes
                         << " B / " << r.measured.messages << " messages, modeled " << r.modeled.bytes << " B / "
                         << r.modeled.messages;
}

template <typename M>
void run_all(const std::vector<PlanCase<M>>& cases, const M& mesh, std::initializer_list<sw::MatmulShape> shapes) {
  CountedGroups<M> g(mesh);
  std::uint64_t seed = 7;
  for (const auto& c : cases)
    for (const auto& shape : shapes) expect_case(g, c, shape, seed++);
}

constexpr sw::MatmulShape even{.m = 16, .k = 24, .n = 32};
constexpr sw::MatmulShape uneven{.m = 13, .k = 19, .n = 11};

}  // namespace

TEST(MatmulMpi, Line) {
  run_all(line_cases_fp64(), Line{world_size()}, {even, uneven});
  run_all(line_cases_fp32(), Line{world_size()}, {uneven});
  run_all(line_cases_complex(), Line{world_size()}, {uneven});
}

TEST(MatmulMpi, GridSeedCasesAndFamilies) {
  const int p = world_size();
  run_all(grid_cases_fp64(), Grid{2, p / 2}, {even, uneven});
  run_all(grid_cases_fp32(), Grid{2, p / 2}, {even, uneven});
  run_all(grid_cases_complex(), Grid{2, p / 2}, {uneven});
  if (p > 2) run_all(grid_cases_fp64(), Grid{p / 2, 2}, {uneven});
}

TEST(MatmulMpi, Cube) {
  const int p = world_size();
  run_all(cube_cases_fp64(), p == 8 ? Cube{2, 2, 2} : Cube{1, 2, p / 2}, {even, uneven});
}

TEST(MatmulMpi, RandomizedSample) {
  std::mt19937_64 draw(424242);  // the same draws on every rank
  const auto line = line_cases_fp64(), line_complex = line_cases_complex();
  const auto grid = grid_cases_fp64(), grid_complex = grid_cases_complex();
  const auto cube_complex = cube_cases_complex();
  const int p = world_size();
  CountedGroups<Line> on_line(Line{p});
  CountedGroups<Grid> on_grid(Grid{2, p / 2});
  CountedGroups<Cube> on_cube(p == 8 ? Cube{2, 2, 2} : Cube{1, 2, p / 2});
  auto extent = [&] { return static_cast<std::int64_t>(std::uniform_int_distribution<int>(0, 17)(draw)); };
  // 60 real cases (a third on the line) and 80 complex ones (complex<double> and complex<float>:
  // the line's every output and variant, the grid's seed cases, SUMMA and ring, 2.5D on layers),
  // each with gemm's alpha, beta, op 'T' and 'C' (run_case).
  for (int i = 0; i < 140; ++i) {
    const sw::MatmulShape shape{.m = extent(), .k = extent(), .n = extent() + 1};
    const std::uint64_t seed = draw();
    switch (i % 7) {
      case 0: expect_case(on_line, line[draw() % line.size()], shape, seed); break;
      case 1: case 2: expect_case(on_grid, grid[draw() % grid.size()], shape, seed); break;
      case 3: expect_case(on_line, line_complex[draw() % line_complex.size()], shape, seed); break;
      case 4: case 5: expect_case(on_grid, grid_complex[draw() % grid_complex.size()], shape, seed); break;
      default: expect_case(on_cube, cube_complex[draw() % cube_complex.size()], shape, seed); break;
    }
    if (::testing::Test::HasFailure()) break;
  }
}

// ---- bad input: a clear exception on every rank, never a hang --------------------------

TEST(MatmulMpi, SliceOrGatherChosenFromTheExtents) {
  // A[-, x] * B[-, -]: square shapes run the gather of A, a matrix times a vector the slice of
  // B; every rank counts the bytes of the schedule the model chose.
  using Plan = sw::matmul_plan<Line, TS<R, S<"x">>, Rep>;
  const Line line{world_size()};
  if (world_size() > 1) {
    EXPECT_TRUE(Plan::uses_alternative(line, {.m = 12, .k = 12, .n = 12}, 8));
    EXPECT_FALSE(Plan::uses_alternative(line, {.m = 12, .k = 12, .n = 1}, 8));
  }
  std::vector<PlanCase<Line>> cases;
  add_case<Line, double, TS<R, S<"x">>, Rep>(cases);
  run_all(cases, line, {{.m = 12, .k = 12, .n = 12}, {.m = 12, .k = 12, .n = 1}, {.m = 13, .k = 13, .n = 13}, {.m = 13, .k = 13, .n = 1}});
}

TEST(MatmulMpi, InnerDimensionsThatDisagreeThrowOnEveryRank) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const auto a = sw::ShardedMatrix<double, Line, TS<S<"x">, R>>::distribute(groups, random_matrix<double>(8, 5, 1));
  const auto b = sw::ShardedMatrix<double, Line, TS<S<"x">, R>>::distribute(groups, random_matrix<double>(6, 3, 2));
  EXPECT_THROW((void)sw::matmul(a, b), std::invalid_argument);
}

TEST(MatmulMpi, ShapesThatDifferAcrossRanksThrowOnEveryRank) {
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // distribute() itself refuses ...
  EXPECT_THROW((void)(sw::ShardedMatrix<double, Line, TS<R, R>>::distribute(groups, random_matrix<double>(4 + rank, 4, 1))),
               std::invalid_argument);
  // ... and so does matmul, for matrices built with the check off.
  std::optional<sw::ShardedMatrix<double, Line, TS<R, R>>> a;
  {
    LocalChecks quiet;
    a.emplace(sw::ShardedMatrix<double, Line, TS<R, R>>::distribute(groups, random_matrix<double>(4, 4 + rank, 1)));
  }
  const auto b = sw::ShardedMatrix<double, Line, TS<R, R>>::distribute(groups, random_matrix<double>(4, 4, 2));
  EXPECT_THROW((void)sw::matmul(*a, b), std::invalid_argument);
}

TEST(MatmulMpi, OperandsOnDifferentGroupMeshesThrowOnEveryRank) {
  sw::ProcessGroupMesh<Line> first(MPI_COMM_WORLD, Line{world_size()});
  sw::ProcessGroupMesh<Line> second(MPI_COMM_WORLD, Line{world_size()});
  const auto a = sw::ShardedMatrix<double, Line, TS<S<"x">, R>>::distribute(first, random_matrix<double>(8, 5, 1));
  const auto b = sw::ShardedMatrix<double, Line, TS<R, R>>::distribute(second, random_matrix<double>(5, 3, 2));
  EXPECT_THROW((void)sw::matmul(a, b), std::invalid_argument);
}

TEST(MatmulMpi, ScatterFromRootAndMatmulInto) {
  sw::ProcessGroupMesh<Grid> groups(MPI_COMM_WORLD, Grid{2, world_size() / 2});
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const auto a_global = random_matrix<double>(9, 7, 3), b_global = random_matrix<double>(7, 10, 4);
  // Only rank 0's matrix counts; the others pass an empty one.
  const auto a = sw::ShardedMatrix<double, Grid, TS<S<"x">, S<"y">>>::scatter(
      groups, rank == 0 ? a_global : Eigen::MatrixXd(0, 0), 0);
  const auto b = sw::ShardedMatrix<double, Grid, TS<S<"x">, S<"y">>>::scatter(
      groups, rank == 0 ? b_global : Eigen::MatrixXd(0, 0), 0);
  sw::ShardedMatrix<double, Grid, TS<S<"x">, S<"y">>> c(groups, 9, 10);
  sw::matmul_into(c, a, b);
  sw::matmul_into(c, a, b, sw::summa);  // again, into the same storage
  EXPECT_LE(relative_error(c.to_global(), a_global * b_global), 1e-12);
  sw::ShardedMatrix<double, Grid, TS<S<"x">, S<"y">>> wrong(groups, 9, 9);
  EXPECT_THROW(sw::matmul_into(wrong, a, b), std::invalid_argument);
}
