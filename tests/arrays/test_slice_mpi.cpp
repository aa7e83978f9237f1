// Slicing under mpiexec (run with 2, 3 and 4 ranks): a sample of random reshards with slices on
// 1-D and 2-D meshes of the world's size, each rank's block against the serial slice and its
// counted traffic (CountingCommunicator over MPI) against the model; and the typed reshard of a
// replicated tensor to a split one, 0 bytes. Verdicts are all-reduced so every rank asserts the same.
// Also the errors of generate and elementwise, the same on every rank (no hang) under MPI; and
// the vector operations' checks of test_linalg_virtual.cpp (linalg_bodies.hpp: dot, norm, axpy,
// scale, matvec, einsum's 0-D output, generate, elementwise, a Partial kept where B is
// replicated) on every 2-axis mesh of the world's ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "linalg/linalg_bodies.hpp"
#include "local_checks.hpp"
#include "mpi_errors.hpp"
#include "mpi_support.hpp"
#include "reshard_random.hpp"
#include "shardwise/tensor.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

void expect_outcome(const ReshardOutcome& o, const std::string& label) {
  double worst = o.error;
  int matched = o.measured == o.modeled ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &matched, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  SCOPED_TRACE(label + " on " + std::to_string(world_size()) + " ranks");
  EXPECT_EQ(worst, 0.0) << "the largest difference from the serial block over the ranks";
  EXPECT_TRUE(matched) << "a rank's traffic differs from the model; this rank measured " << o.measured.bytes
                       << " B, modeled " << o.modeled.bytes << " B";
}

}  // namespace

TEST(SliceMpi, RandomizedReshards) {
  LocalChecks quiet;
  const int p = world_size();
  std::vector<std::vector<int>> meshes = {{p}};
  if (p % 2 == 0) meshes.push_back({2, p / 2});
  if (p % 2 == 0 && p > 2) meshes.push_back({p / 2, 2});
  CountedGroups<EinsumLine> line(EinsumLine{p});
  // The 2-D meshes only where the world splits in two.
  std::optional<CountedGroups<EinsumGrid>> grid_a, grid_b;
  if (p % 2 == 0) grid_a.emplace(EinsumGrid{2, p / 2}), grid_b.emplace(EinsumGrid{p / 2, 2});
  std::mt19937_64 draw(1125);  // the same draws on every rank
  int planned = 0, sliced = 0;
  while (planned < 150) {
    const ReshardCase c = draw_reshard_case(draw, meshes);
    if (!c.plan().error.ok()) continue;
    ++planned;
    sliced += c.slices();
    ReshardOutcome o;
    if (c.mesh.size() == 1) o = run_reshard_case(line.groups, c, *line.counters);
    else if (c.mesh[0] == 2) o = run_reshard_case(grid_a->groups, c, *grid_a->counters);
    else o = run_reshard_case(grid_b->groups, c, *grid_b->counters);
    expect_outcome(o, "randomized reshard " + std::to_string(planned) + ": " + c.describe());
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(sliced, 30);
}

TEST(SliceMpi, TypedReplicatedToSplit) {
  LocalChecks quiet;
  using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
  using Rep = sw::TensorSharding<sw::Replicated, sw::Replicated>;
  using Rows = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
  const int p = world_size();
  CountedGroups<Line> g(Line{p});
  Eigen::Tensor<double, 2, Eigen::RowMajor> global(2 * p + 1, 3);  // uneven over p ranks
  for (Eigen::Index i = 0; i < global.size(); ++i) global.data()[i] = static_cast<double>(i);
  const auto replicated = sw::ShardedTensor<double, Line, Rep>::distribute(g.groups, global);
  const sw::Traffic before = g.counters->total();
  const auto rows = sw::reshard<Rows>(replicated);
  const sw::Traffic sent = g.counters->total() - before;
  const sw::Traffic modeled =
      sw::reshard_plan<Line, Rep, Rows>::traffic(Line{p}, g.groups.coordinate(), {2 * p + 1, 3}, sizeof(double));
  int ok = sent == sw::Traffic{} && modeled == sw::Traffic{};
  const auto offset = rows.offsets()[0];
  for (Eigen::Index i = 0; i < rows.local().dimension(0); ++i)
    for (Eigen::Index j = 0; j < 3; ++j) ok = ok && rows.local()(i, j) == global(i + offset, j);
  ok = ok && rows.local_extents()[0] == sw::detail::block_size(2 * p + 1, p, world_rank());
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  EXPECT_TRUE(ok) << "a rank's slice differs from the serial one, or bytes were sent (this rank: " << sent.bytes << " B)";
}

// ---- generate and elementwise: the same error on every rank ---------------------------------

TEST(LinalgErrorsMpi, GenerateWithExtentsThatDifferOnOneRank) {
  using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
  using Rows = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const std::int64_t rows = world_rank() == 1 ? 10 : 9;  // a mistake made on one rank only
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD,
      [&] {
        (void)sw::ShardedTensor<double, Line, Rows>::generate(groups, {rows, 4},
                                                              [](std::int64_t i, std::int64_t j) { return 1.0 * (i + j); });
      },
      "shardwise::ShardedTensor::generate: the extents differ across ranks");
}

TEST(LinalgErrorsMpi, ElementwiseOfArraysWithDifferentExtents) {
  using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
  using Vector = sw::TensorSharding<sw::Split<"x">>;
  sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{world_size()});
  const sw::ShardedTensor<double, Line, Vector> x(groups, {7}), y(groups, {8});
  expect_same_error_on_every_rank<std::invalid_argument>(
      MPI_COMM_WORLD, [&] { (void)sw::elementwise([](double a, double b) { return a + b; }, x, y); },
      "shardwise::elementwise: the arrays have different extents (the first is [7], the result [7])");
}

// ---- the vector operations under mpiexec: linalg_bodies.hpp on P x 1, 1 x P and 2 x P/2 ---------

namespace {

using Mesh2 = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>, sw::Axis<"y", sw::dynamic_extent>>;

/// The 2-axis meshes of the world's ranks the bodies run on: P x 1, 1 x P, and 2 x P/2 when P is
/// even and above 2.
std::vector<Mesh2> meshes_of_the_world() {
  const int p = world_size();
  std::vector<Mesh2> meshes = {Mesh2{p, 1}, Mesh2{1, p}};
  if (p % 2 == 0 && p > 2) meshes.push_back(Mesh2{2, p / 2});
  return meshes;
}

/// Runs body(groups, counters, fail) on every rank for each mesh, with counting and the checks
/// at CheckLevel::local; every rank asserts the same verdict and prints its own failure.
template <typename Body>
void on_every_mesh(Body&& body) {
  LocalChecks quiet;
  for (const Mesh2& mesh : meshes_of_the_world()) {
    CountedGroups<Mesh2> g(mesh);
    std::string failure;
    body(g.groups, *g.counters, [&failure](const std::string& what) {
      if (failure.empty()) failure = what;
    });
    int ok = failure.empty() ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    EXPECT_TRUE(ok) << "on " << mesh.extent(0) << " x " << mesh.extent(1) << " ranks; this rank (" << world_rank()
                    << "): " << (failure.empty() ? "no failure" : failure);
  }
}

#define SHARDWISE_ON_EVERY_MESH(body)                                                               \
  on_every_mesh([](sw::ProcessGroupMesh<Mesh2>& groups, const sw::CommCounters& counters, auto fail) { \
    body(groups, counters, fail);                                                                     \
  })

}  // namespace

TEST(LinalgMpi, EinsumScalarOutput) { SHARDWISE_ON_EVERY_MESH(linalg::einsum_scalar_output); }
TEST(LinalgMpi, DotNormAxpyScaleMatvec) { SHARDWISE_ON_EVERY_MESH(linalg::dot_norm_axpy_scale_matvec); }
TEST(LinalgMpi, PartialKeptWhereBIsReplicated) {
  SHARDWISE_ON_EVERY_MESH((linalg::keep_partial_with_b_replicated<Mesh2, "x">));
  SHARDWISE_ON_EVERY_MESH((linalg::keep_partial_with_b_replicated<Mesh2, "x", "y">));
}
TEST(LinalgMpi, GenerateFillsEachBlockFromGlobalIndices) { SHARDWISE_ON_EVERY_MESH(linalg::generate_blocks); }
TEST(LinalgMpi, ElementwiseOnEachBlock) { SHARDWISE_ON_EVERY_MESH(linalg::elementwise_on_blocks); }
TEST(LinalgMpi, ComplexDotConjugatesTheFirstArgument) { SHARDWISE_ON_EVERY_MESH(linalg::complex_dot_and_norm); }
TEST(LinalgMpi, NormDoesNotOverflow) { SHARDWISE_ON_EVERY_MESH(linalg::norm_without_overflow); }
