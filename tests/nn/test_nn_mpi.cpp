// nn under mpiexec (2, 4 and 8 ranks): every FeedForward policy forward and backward against
// serial Eigen with every rank's counted traffic against the model, and the pipelined MLP
// (4 stages, so 4 or 8 ranks) trained against serial training, with real MPI messages whose
// sizes pass the eager limit (a send may block until its receive is posted). Verdicts are
// all-reduced, so every rank asserts the same.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>

#include "mpi_support.hpp"
#include "local_checks.hpp"
#include "nn_cases.hpp"
#include "shardwise/comm/mpi.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

template <typename M>
void expect_ffn_case(CountedGroups<M>& g, const FfnCase<M>& c, sw::FfnShape shape, std::uint64_t seed) {
  const LocalChecks counted_against_the_plan;
  const FfnCaseResult r = c.run(g.groups, shape, seed, g.counters.get());
  double worst = r.worst_error() / r.tolerance;
  int ok[3] = {r.measured_forward == r.modeled_forward, r.measured_backward == r.modeled_backward,
               r.measured_first_layer == r.modeled_first_layer && r.only_collectives};
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, ok, 3, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  SCOPED_TRACE(c.name + " on " + std::to_string(world_size()) + " ranks, b=" + std::to_string(shape.b) + " s=" +
               std::to_string(shape.s) + " m=" + std::to_string(shape.m) + " h=" + std::to_string(shape.h));
  EXPECT_LE(worst, 1.0) << "a rank's error exceeds the tolerance (worst error / tolerance shown)";
  EXPECT_TRUE(ok[0]) << "a rank's forward traffic differs from the model";
  EXPECT_TRUE(ok[1]) << "a rank's backward traffic differs from the model";
  EXPECT_TRUE(ok[2]) << "a rank's traffic without dX differs from the model";
}

constexpr sw::FfnShape even{.b = 4, .s = 8, .m = 16, .h = 24};
constexpr sw::FfnShape uneven{.b = 3, .s = 7, .m = 9, .h = 13};

}  // namespace

TEST(FfnMpi, EveryPolicyOnOneAxis) {
  CountedGroups<Grid2> g(Grid2{1, world_size()});
  std::uint64_t seed = 1;
  for (const auto& c : ffn_cases())
    for (const auto& shape : {even, uneven}) expect_ffn_case(g, c, shape, seed++);
}

TEST(FfnMpi, EveryPolicyOnTwoAxes) {
  const int p = world_size();
  if (p < 4) GTEST_SKIP() << "two axes of extent 2 or more need 4 ranks";
  CountedGroups<Grid2> g(Grid2{2, p / 2});
  std::uint64_t seed = 50;
  for (const auto& c : ffn_cases())
    for (const auto& shape : {even, uneven}) expect_ffn_case(g, c, shape, seed++);
}

TEST(PipelinedMlpMpi, BothSchedulesMatchSerialTraining) {
  const int p = world_size();
  if (p % 4 != 0) GTEST_SKIP() << "the pipelined MLP has 4 stages: run it on 4 or 8 ranks";
  CountedGroups<MlpMesh> g(MlpMesh{p / 4});
  for (ScheduleKind schedule : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b})
    for (OptimizerKind optimizer : {OptimizerKind::sgd, OptimizerKind::adam})
      for (bool per_micro_batch : {false, true}) {
        const MlpRunResult r = run_mlp_training(g.groups, g.counters.get(), schedule, optimizer, per_micro_batch);
        double worst[2] = {r.weight_error, r.loss_error};
        int traffic_ok = r.measured_per_step == r.modeled_per_step;
        MPI_Allreduce(MPI_IN_PLACE, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &traffic_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        SCOPED_TRACE(r.label + " on " + std::to_string(p) + " ranks");
        EXPECT_LE(worst[0], 1e-10) << "weights differ from serial training";
        EXPECT_LE(worst[1], 1e-10) << "losses differ from serial training";
        EXPECT_TRUE(traffic_ok) << "a stage's point-to-point traffic differs from the model";
      }
}
