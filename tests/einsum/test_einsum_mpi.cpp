// einsum under mpiexec (run with 2, 4 and 8 ranks): the typed pool and a randomized sample of
// N-D contractions on 1-D, 2-D and 3-D meshes of the world's size, each against the serial
// reference, with every rank's traffic (CountingCommunicator over MPI) against the model.
// Verdicts are all-reduced so every rank asserts the same.
#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <string>
#include <vector>

#include "einsum_random.hpp"
#include "einsum_typed_cases.hpp"
#include "local_checks.hpp"
#include "mpi_support.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

/// The worst error over the ranks and whether every rank's traffic matched its model.
void expect_outcome(const EinsumOutcome& o, const std::string& label) {
  double worst = o.error / o.tolerance;  // at most 1 when within tolerance
  int matched = o.measured == o.modeled ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &matched, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  SCOPED_TRACE(label + " on " + std::to_string(world_size()) + " ranks");
  EXPECT_LE(worst, 1.0) << "the worst error over the ranks, in units of the tolerance (1e-12 for double, 1e-5 for float)";
  EXPECT_TRUE(matched) << "a rank's traffic differs from the model; this rank measured " << o.measured.bytes
                       << " B / " << o.measured.messages << " messages, modeled " << o.modeled.bytes << " B / "
                       << o.modeled.messages;
}

}  // namespace

/// The owning run as above, and the same product on transposed or permuted views: the same
/// result within the tolerance and the same traffic.
void expect_typed_outcome(const TypedEinsumOutcome& o, const std::string& label) {
  expect_outcome(o, label);
  double worst = o.permuted_error / o.tolerance;
  int matched = o.permuted_measured == o.modeled ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &matched, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  SCOPED_TRACE(label + " on permuted views, " + std::to_string(world_size()) + " ranks");
  EXPECT_LE(worst, 1.0) << "the worst error on permuted views, in units of the tolerance";
  EXPECT_TRUE(matched) << "a rank's traffic on permuted views differs from the model; this rank measured "
                       << o.permuted_measured.bytes << " B, modeled " << o.modeled.bytes << " B";
}

TEST(EinsumMpi, TypedCases) {
  LocalChecks quiet;
  const int p = world_size();
  std::uint64_t seed = 3;
  for (const DpTp& mesh : {DpTp{p / 2, 2}, DpTp{p, 1}, DpTp{1, p}}) {
    CountedGroups<DpTp> g(mesh);
    for (const auto& c : typed_einsum_cases()) {
      expect_typed_outcome(c.run(g.groups, *g.counters, seed++),
                     c.name + " on dp x tp = " + std::to_string(mesh.extent(0)) + " x " + std::to_string(mesh.extent(1)));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(EinsumMpi, RandomizedSample) {
  LocalChecks quiet;
  const int p = world_size();
  const std::vector<std::vector<int>> meshes = {{p}, {2, p / 2}, {p / 2, 2}, {p >= 8 ? 2 : 1, 2, p >= 8 ? 2 : p / 2}};
  CountedGroups<EinsumLine> line(EinsumLine{p});
  CountedGroups<EinsumGrid> grid_a(EinsumGrid{2, p / 2}), grid_b(EinsumGrid{p / 2, 2});
  CountedGroups<EinsumCube> cube(EinsumCube{meshes[3][0], meshes[3][1], meshes[3][2]});
  std::mt19937_64 draw(977);  // the same draws on every rank
  int planned = 0;
  while (planned < 120) {
    const EinsumCase c = draw_einsum_case(draw, meshes);
    if (!c.plan().error.ok()) continue;
    ++planned;
    EinsumOutcome o;
    if (c.mesh.size() == 1) o = run_einsum_case(line.groups, c, *line.counters);
    else if (c.mesh.size() == 3) o = run_einsum_case(cube.groups, c, *cube.counters);
    else if (c.mesh[0] == 2) o = run_einsum_case(grid_a.groups, c, *grid_a.counters);
    else o = run_einsum_case(grid_b.groups, c, *grid_b.counters);
    expect_outcome(o, "randomized case " + std::to_string(planned) + ": " + c.describe());
    if (::testing::Test::HasFailure()) return;
  }
}
