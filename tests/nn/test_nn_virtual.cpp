// nn on the virtual cluster: every FeedForward policy forward and backward against serial
// Eigen with every rank's counted traffic against the plan's model; the serial reference
// against finite differences; the optimizers' formulas; the pipelined MLP trained against
// serial training for both schedules; bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "local_checks.hpp"
#include "nn_cases.hpp"
#include "shardwise/comm/virtual_cluster.hpp"
#include "shardwise/nn/optimizer.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

std::string shape_text(sw::FfnShape s) {
  return "b=" + std::to_string(s.b) + " s=" + std::to_string(s.s) + " m=" + std::to_string(s.m) + " h=" + std::to_string(s.h);
}

std::string traffic_text(const sw::FfnTraffic& t) {
  auto one = [](const char* name, const sw::OpCount& k) {
    return std::string(name) + " " + std::to_string(k.traffic.bytes) + " B / " + std::to_string(k.traffic.messages) +
           " msg / " + std::to_string(k.calls) + " calls";
  };
  return one("AllGather", t.all_gather) + ", " + one("ReduceScatter", t.reduce_scatter) + ", " + one("AllReduce", t.all_reduce);
}

/// Runs `c` on every rank of a virtual cluster over `mesh`; checks errors and traffic per rank.
template <typename M>
std::vector<FfnCaseResult> expect_ffn_case(const FfnCase<M>& c, const M& mesh, sw::FfnShape shape, std::uint64_t seed) {
  SCOPED_TRACE(c.name + " on " + std::to_string(mesh.size()) + " ranks, " + shape_text(shape));
  std::vector<FfnCaseResult> results(static_cast<std::size_t>(mesh.size()));
  const LocalChecks counted_against_the_plan;  // around the whole run: the rank threads share it
  sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<M> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters), mesh);
    results[static_cast<std::size_t>(rank)] = c.run(groups, shape, seed, counters.get());
  });
  for (std::size_t r = 0; r < results.size(); ++r) {
    const FfnCaseResult& x = results[r];
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + x.description);
    EXPECT_LE(x.error_y, x.tolerance);
    EXPECT_LE(x.error_dx, x.tolerance);
    EXPECT_LE(x.error_dw1, x.tolerance);
    EXPECT_LE(x.error_db1, x.tolerance);
    EXPECT_LE(x.error_dw2, x.tolerance);
    EXPECT_LE(x.error_db2, x.tolerance);
    EXPECT_TRUE(x.only_collectives);
    EXPECT_EQ(x.measured_forward, x.modeled_forward)
        << "forward: measured " << traffic_text(x.measured_forward) << "; modeled " << traffic_text(x.modeled_forward);
    EXPECT_EQ(x.measured_backward, x.modeled_backward)
        << "backward: measured " << traffic_text(x.measured_backward) << "; modeled " << traffic_text(x.modeled_backward);
    EXPECT_EQ(x.measured_first_layer, x.modeled_first_layer)
        << "backward without dX: measured " << traffic_text(x.measured_first_layer) << "; modeled "
        << traffic_text(x.modeled_first_layer);
  }
  return results;
}

constexpr sw::FfnShape even{.b = 4, .s = 6, .m = 8, .h = 12};
constexpr sw::FfnShape uneven{.b = 3, .s = 5, .m = 7, .h = 11};
constexpr sw::FfnShape tiny{.b = 1, .s = 2, .m = 3, .h = 2};  // fewer tokens and hidden units than ranks: empty blocks

}  // namespace

TEST(FfnVirtual, EveryPolicyOnOneAxisMatchesSerialAndItsTrafficModel) {
  // x = 1: GSPMD's batch axis is trivial; Megatron runs over y = 1 .. 4 ranks.
  std::uint64_t seed = 1;
  for (const auto& c : ffn_cases())
    for (int ranks : {1, 2, 3, 4})
      for (const auto& shape : {even, uneven, tiny}) expect_ffn_case(c, Grid2{1, ranks}, shape, seed++);
}

TEST(FfnVirtual, EveryPolicyOnTwoAxesMatchesSerialAndItsTrafficModel) {
  // GSPMD on both axes; Megatron over y with independent replicas along x.
  std::uint64_t seed = 100;
  for (const auto& c : ffn_cases()) {
    expect_ffn_case(c, Grid2{2, 3}, even, seed++);
    expect_ffn_case(c, Grid2{2, 3}, uneven, seed++);
    expect_ffn_case(c, Grid2{3, 2}, uneven, seed++);
    expect_ffn_case(c, Grid2{2, 2}, tiny, seed++);
  }
}

TEST(FfnVirtual, MegatronTpIsExactlyOneAllReduceOfBsmEachWay) {
  const sw::FfnShape shape{.b = 2, .s = 5, .m = 6, .h = 8};
  const std::int64_t n = shape.b * shape.s * shape.m;
  for (const auto& c : ffn_cases()) {
    if (c.name != "MegatronTP over y fp64") continue;
    const auto results = expect_ffn_case(c, Grid2{1, 3}, shape, 9);
    for (int rank = 0; rank < 3; ++rank) {
      const auto& r = results[static_cast<std::size_t>(rank)];
      const sw::Traffic one = sw::detail::ring_all_reduce_traffic(n, 3, rank, sizeof(double));
      EXPECT_EQ(r.measured_forward.all_reduce, (sw::OpCount{one, 1}));
      EXPECT_EQ(r.measured_forward.total(), one);
      EXPECT_EQ(r.measured_backward.all_reduce, (sw::OpCount{one, 1}));
      EXPECT_EQ(r.measured_backward.total(), one);
      EXPECT_EQ(r.measured_first_layer.total(), sw::Traffic{});
    }
    return;
  }
  FAIL() << "no MegatronTP fp64 case";
}

TEST(FfnVirtual, SerialReferenceMatchesFiniteDifferences) {
  EXPECT_LE(serial_ffn_finite_difference_error(), 1e-7);
}

TEST(FfnVirtual, MismatchedShapesThrow) {
  sw::run_virtual_cluster(2, [](sw::VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Grid2> groups(std::move(comm), Grid2{1, 2});
    EXPECT_EQ(ffn_misuse_problems(groups), "");
  });
}

// ---- optimizers ------------------------------------------------------------------------------

TEST(Optimizers, SgdAndAdamFollowTheirFormulas) {
  std::vector<double> value{1.0, -2.0}, gradient{0.5, -0.25};
  const std::array<sw::ParameterRef<double>, 1> p{sw::ParameterRef<double>{value, gradient}};
  sw::Sgd<double> sgd(0.1, 0.9);
  sgd.step(p);  // v = g
  sgd.step(p);  // v = 0.9 g + g
  EXPECT_DOUBLE_EQ(value[0], 1.0 - 0.1 * 0.5 - 0.1 * 1.9 * 0.5);
  EXPECT_DOUBLE_EQ(value[1], -2.0 + 0.1 * 0.25 + 0.1 * 1.9 * 0.25);

  value = {1.0, -2.0};
  sw::Adam<double> adam({0.01, 0.9, 0.999, 1e-8});
  adam.step(p);
  // Step 1: m_hat = g, v_hat = g^2, so the update is lr * g / (|g| + eps).
  EXPECT_NEAR(value[0], 1.0 - 0.01 * 0.5 / (0.5 + 1e-8), 1e-15);
  EXPECT_NEAR(value[1], -2.0 + 0.01 * 0.25 / (0.25 + 1e-8), 1e-15);
  const double v0 = value[0];
  gradient[0] = 0.1;
  adam.step(p);
  const double m = 0.9 * 0.1 * 0.5 + 0.1 * 0.1, v = 0.999 * 0.001 * 0.25 + 0.001 * 0.01;
  EXPECT_NEAR(value[0], v0 - 0.01 * (m / (1 - 0.81)) / (std::sqrt(v / (1 - 0.999 * 0.999)) + 1e-8), 1e-15);
  EXPECT_EQ(adam.steps(), 2);

  std::vector<double> other(3), other_gradient(3);
  const std::array<sw::ParameterRef<double>, 1> changed{sw::ParameterRef<double>{other, other_gradient}};
  EXPECT_THROW(adam.step(changed), std::invalid_argument);
  EXPECT_THROW(sw::Sgd<double>(0.0), std::invalid_argument);
}

// ---- pipelined MLP ---------------------------------------------------------------------------

namespace {

void expect_training(ScheduleKind schedule, OptimizerKind optimizer, bool per_micro_batch) {
  std::vector<MlpRunResult> results(4);
  sw::run_virtual_cluster(4, [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<MlpMesh> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters),
                                         MlpMesh{1});
    results[static_cast<std::size_t>(rank)] = run_mlp_training(groups, counters.get(), schedule, optimizer, per_micro_batch);
  });
  for (std::size_t stage = 0; stage < results.size(); ++stage) {
    const MlpRunResult& r = results[stage];
    SCOPED_TRACE(r.label + ", stage " + std::to_string(stage));
    EXPECT_LE(r.weight_error, 1e-10);
    EXPECT_LE(r.loss_error, 1e-10);
    EXPECT_EQ(r.measured_per_step, r.modeled_per_step)
        << "measured " << r.measured_per_step.bytes << " B / " << r.measured_per_step.messages << " messages";
  }
  EXPECT_LT(results[3].last_loss, results[3].first_loss) << results[3].label << ": training does not reduce the loss";
}

}  // namespace

TEST(PipelinedMlpVirtual, GPipeMatchesSerialTraining) {
  expect_training(ScheduleKind::gpipe, OptimizerKind::sgd, false);
  expect_training(ScheduleKind::gpipe, OptimizerKind::adam, false);
}

TEST(PipelinedMlpVirtual, OneFOneBMatchesSerialTraining) {
  expect_training(ScheduleKind::one_f_one_b, OptimizerKind::sgd, false);
  expect_training(ScheduleKind::one_f_one_b, OptimizerKind::adam, false);
}

TEST(PipelinedMlpVirtual, UpdatePerMicroBatchMatchesTheSerialRunOfTheSchedule) {
  expect_training(ScheduleKind::gpipe, OptimizerKind::sgd, true);
  expect_training(ScheduleKind::one_f_one_b, OptimizerKind::adam, true);
}

TEST(PipelinedMlpVirtual, WrongStageCountThrows) {
  using Line = sw::Mesh<sw::Axis<"pp", 3>>;
  sw::run_virtual_cluster(3, [](sw::VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Line> groups(std::move(comm));
    EXPECT_EQ(mlp_wrong_stage_count_problem(groups), "");
  });
}
