// Views under mpiexec (2, 3 and 4 ranks): the cases of tests/arrays/view_cases.hpp and
// tests/arrays/tensor_view_cases.hpp with MPI and a counting communicator. Verdicts are all-reduced
// so every rank asserts the same.
#include <gtest/gtest.h>
#include <mpi.h>

#include "allocation_counter.hpp"
#include "scalapack/block_cyclic_cases.hpp"
#include "local_checks.hpp"
#include "mpi_support.hpp"
#include "own_buffer_cases.hpp"
#include "tensor_view_cases.hpp"
#include "view_cases.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

template <typename M>
void run_all(const std::vector<ViewCase<M>>& cases, const M& mesh, std::initializer_list<sw::MatmulShape> shapes) {
  CountedGroups<M> g(mesh);
  std::uint64_t seed = 5;
  for (const auto& c : cases)
    for (const auto& shape : shapes) {
      LocalChecks quiet;
      const ViewResult v = c.run(g.groups, shape, seed++, g.counters.get());
      double worst[2] = {v.error, v.transposed_error};
      int ok[4] = {v.traffic_ok, v.in_place, v.no_copy, v.to_global_ok};
      MPI_Allreduce(MPI_IN_PLACE, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(MPI_IN_PLACE, ok, 4, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      SCOPED_TRACE(c.name + " on " + std::to_string(world_size()) + " ranks, m=" + std::to_string(shape.m) +
                   " k=" + std::to_string(shape.k) + " n=" + std::to_string(shape.n));
      EXPECT_LE(worst[0], v.tolerance);
      EXPECT_LE(worst[1], v.tolerance);
      EXPECT_TRUE(ok[0]) << "traffic differs from the model; this rank:" << v.detail;
      EXPECT_TRUE(ok[1]) << "a view's data pointer is not the buffer's";
      EXPECT_TRUE(ok[2]) << "a view was copied; this rank:" << v.detail;
      EXPECT_TRUE(ok[3]) << "a view's to_global differs";
    }
}

}  // namespace

TEST(ViewMpi, LineEveryPolicy) {
  run_all(line_view_cases(), Line{world_size()}, {{.m = 16, .k = 24, .n = 32}, {.m = 13, .k = 19, .n = 11}});
}

TEST(ViewMpi, EinsumOnTensorViews) {
  CountedGroups<Line> g(Line{world_size()});
  std::uint64_t seed = 9;
  for (const auto& c : line_tensor_view_cases())
    for (const std::array<std::int64_t, 4> e : {std::array<std::int64_t, 4>{2, 5, 7, 3}, {3, 4, 8, 6}}) {
      LocalChecks quiet;
      const ViewResult v = c.run(g.groups, e, seed++, g.counters.get());
      double worst[2] = {v.error, v.transposed_error};
      int ok[4] = {v.traffic_ok, v.in_place, v.no_copy, v.to_global_ok};
      MPI_Allreduce(MPI_IN_PLACE, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(MPI_IN_PLACE, ok, 4, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      SCOPED_TRACE(c.name + " on " + std::to_string(world_size()) + " ranks");
      EXPECT_LE(worst[0], v.tolerance);
      EXPECT_LE(worst[1], v.tolerance);
      EXPECT_TRUE(ok[0]) << "traffic differs from the model; this rank:" << v.detail;
      EXPECT_TRUE(ok[1]) << "a view's data pointer is not the buffer's";
      EXPECT_TRUE(ok[2]) << "a view was copied; this rank:" << v.detail;
      EXPECT_TRUE(ok[3]) << "a view's to_global differs";
    }
}

TEST(ViewMpi, GridOuterFullSumma) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "a 2 x p/2 grid needs an even number of ranks";
  run_all(grid_view_cases(), Grid{2, world_size() / 2}, {{.m = 13, .k = 19, .n = 11}});
}

// Nothing distributed: each rank's own buffers as views (see tests/arrays/own_buffer_cases.hpp).
TEST(ViewMpi, OwnBuffersNothingDistributed) {
  CountedGroups<Line> g(Line{world_size()});
  for (std::int64_t pad : {0, 3}) {
    LocalChecks quiet;
    const OwnBufferResult v = run_own_buffers(g.groups, g.counters.get(), 97, 40, 23, pad);
    double worst = v.error;
    int ok[4] = {v.traffic_ok, v.in_place, v.no_workspace, v.allocations_ok};
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, ok, 4, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    SCOPED_TRACE("leading dimension padded by " + std::to_string(pad) + " on " + std::to_string(world_size()) + " ranks");
    EXPECT_LE(worst, 1e-12) << "this rank:" << v.detail;
    EXPECT_TRUE(ok[0]) << "traffic differs from the model; this rank:" << v.detail;
    EXPECT_TRUE(ok[1]) << "a view's data is not the caller's buffer";
    EXPECT_TRUE(ok[2]) << "a local plan used the workspace; this rank:" << v.detail;
    EXPECT_TRUE(ok[3]) << "a repeated call allocated more than its result; this rank:" << v.detail;
  }
}

// Block-cyclic arrays (tests/scalapack/block_cyclic_cases.hpp) under mpiexec: P x 1, 1 x P and 2 x P/2.
TEST(ViewMpi, BlockCyclicLayoutsReshardsAndProducts) {
  const int p = world_size();
  std::vector<std::pair<int, int>> grids{{p, 1}, {1, p}};
  if (p % 2 == 0 && p > 2) grids.emplace_back(2, p / 2);
  for (const auto& [rows, cols] : grids) {
    CountedGroups<RowsCols> g(RowsCols{rows, cols});
    LocalChecks quiet;
    std::string first;
    run_block_cyclic_cases(g.groups, *g.counters, [&](const std::string& what) {
      if (first.empty()) first = what;
    });
    int ok = first.empty() ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    EXPECT_TRUE(ok) << rows << " x " << cols << ": this rank: " << first;
  }
}
