// The nn test cases both backends run (the virtual cluster and mpiexec), type-erased so that
// the test programs instantiate nothing heavy: every FeedForward policy forward and backward
// against serial Eigen with its counted traffic against the plan's model, and pipelined MLP
// training against serial training. The instantiations live in nn_ffn_cases_*.cpp and
// nn_mlp_cases.cpp, compiled once into a static library (two cores build them in parallel).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "shardwise/comm/counting.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/nn/ffn_policy.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace shardwise::testing {

/// Two axes: GSPMD's batch and model axes; Megatron runs over y, with x an axis of independent
/// replicas (x = 1 makes it a plain tensor-parallel line).
using Grid2 = Mesh<Axis<"x", dynamic_extent>, Axis<"y", dynamic_extent>>;
/// The pipelined MLP: independent replicas along dp (same data), 4 stages along pp.
using MlpMesh = Mesh<Axis<"dp", dynamic_extent>, Axis<"pp", 4>>;

/// What one rank saw in one FeedForward case (errors relative to serial double Eigen).
struct FfnCaseResult {
  std::string description;  ///< the plan's describe()
  double tolerance = 0;     ///< fp64 1e-12, fp32 1e-4
  double error_y = 0, error_dx = 0, error_dw1 = 0, error_db1 = 0, error_dw2 = 0, error_db2 = 0;
  /// Counted by the CountingCommunicator, and modeled by feed_forward_plan: the forward, the
  /// backward, and a second backward without dX (a first layer), which accumulates.
  FfnTraffic measured_forward, modeled_forward, measured_backward, modeled_backward, measured_first_layer,
      modeled_first_layer;
  bool only_collectives = true;  ///< nothing went point to point or by broadcast
  [[nodiscard]] double worst_error() const;
};

/// One FeedForward case: runs on a group mesh whose communicator counts into `counters`.
template <typename M>
struct FfnCase {
  std::string name;
  std::function<FfnCaseResult(ProcessGroupMesh<M>&, FfnShape, std::uint64_t seed, const CommCounters* counters)> run;
};

/// Every policy: Unsharded, GSPMD over (x, y), MegatronTP and MegatronSP over y, in fp64; and
/// MegatronTP and GSPMD in fp32. (Few instantiations: each costs tens of seconds to compile
/// under the sanitizers.)
std::vector<FfnCase<Grid2>> ffn_cases();

/// Which pipeline schedule, optimizer and update mode a training run uses.
enum class ScheduleKind { gpipe, one_f_one_b };
enum class OptimizerKind { sgd, adam };

/// What one rank saw after training the pipelined MLP for `steps` steps.
struct MlpRunResult {
  std::string label;
  double weight_error = 0;  ///< max |W - W_serial|, |b - b_serial| of this rank's layer
  double loss_error = 0;    ///< max over steps |loss - serial loss| on the last stage (0 elsewhere)
  double first_loss = 0, last_loss = 0;  ///< on the last stage
  Traffic measured_per_step;             ///< point-to-point traffic of this rank in one step
  Traffic modeled_per_step;              ///< PipelineEngine::send_traffic
};

/// Trains the 4-stage pipelined MLP (Pipeline<4, 6, schedule>) for `steps` steps on a batch of
/// 60 rows with the given optimizer and mode, next to a serial reference: whole-batch training
/// for per-batch updates, and for per-micro-batch updates a serial run of the schedule's table.
MlpRunResult run_mlp_training(ProcessGroupMesh<MlpMesh>& groups, const CommCounters* counters, ScheduleKind schedule,
                              OptimizerKind optimizer, bool per_micro_batch, int steps = 10);

/// Largest relative error of the serial FeedForward's gradients against central differences.
double serial_ffn_finite_difference_error();

/// Feeds a MegatronTP layer (over y of `groups`) mismatched shapes: a wrong model width, a
/// backward before any forward, a backward whose batch differs from the forward's, and
/// parameters of inconsistent shapes. Returns what went wrong ("" when every misuse threw
/// std::invalid_argument and a correct backward did not). Collective over `groups`.
std::string ffn_misuse_problems(ProcessGroupMesh<Grid2>& groups);

/// Builds the 4-stage pipelined MLP over an axis of another extent; "" when that throws
/// std::invalid_argument, as it must.
template <typename M>
std::string mlp_wrong_stage_count_problem(ProcessGroupMesh<M>& groups);
extern template std::string mlp_wrong_stage_count_problem(ProcessGroupMesh<Mesh<Axis<"pp", 3>>>& groups);

}  // namespace shardwise::testing
