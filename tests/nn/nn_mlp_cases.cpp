// The pipelined MLP trained for a few steps against serial references (fp64): whole-batch
// training for per-batch updates; for per-micro-batch updates (the seed's way) a serial run
// of the same schedule table, cycle by cycle, stage by stage.
#include <array>
#include <cmath>

#include "nn_cases.hpp"
#include "nn_reference.hpp"
#include "shardwise/nn/mlp.hpp"

namespace shardwise::testing {

namespace {

constexpr int stages = 4, micro_batches = 6;
constexpr std::int64_t rows = 60;  // micro-batches of 10 rows: messages of up to 7.7 KB, past MPI's eager limit
constexpr std::array<std::int64_t, stages + 1> widths{48, 96, 80, 72, 40};
constexpr double output_width = static_cast<double>(widths[stages]);

struct Model {
  std::vector<MatrixXd> w;
  std::vector<VectorXd> b;
};

Model initial_model() {
  Model model;
  for (std::size_t l = 0; l < stages; ++l) {
    const double bound = std::sqrt(6.0 / static_cast<double>(widths[l] + widths[l + 1]));
    model.w.push_back(uniform_matrix(widths[l], widths[l + 1], 100 + l, -bound, bound));
    model.b.push_back(uniform_matrix(widths[l + 1], 1, 200 + l, 0.0, 0.1));  // few dead units at the start
  }
  return model;
}

const MatrixXd& inputs() {
  static const MatrixXd x = uniform_matrix(rows, widths[0], 7);
  return x;
}
const MatrixXd& targets() {
  static const MatrixXd t = uniform_matrix(rows, widths[stages], 8, 0.0, 1.0);  // the last layer has a ReLU too
  return t;
}

/// SGD or Adam behind one interface.
struct AnyOptimizer {
  OptimizerKind kind;
  Sgd<double> sgd{0.05};
  Adam<double> adam{1e-3};
  void step(std::span<const ParameterRef<double>> parameters) {
    if (kind == OptimizerKind::sgd) sgd.step(parameters);
    else adam.step(parameters);
  }
};

std::array<ParameterRef<double>, 2> parameters_of(SerialDense& layer) {
  auto span = [](auto& m) { return std::span<double>(m.data(), static_cast<std::size_t>(m.size())); };
  return {ParameterRef<double>{span(layer.w), span(layer.dw)}, ParameterRef<double>{span(layer.b), span(layer.db)}};
}

SerialMlp serial_model() {
  const Model model = initial_model();
  SerialMlp mlp;
  for (std::size_t l = 0; l < stages; ++l) mlp.layers.push_back({model.w[l], model.b[l], {}, {}});
  mlp.zero_gradients();
  return mlp;
}

/// Whole-batch training: the reference of UpdateMode::per_batch. Returns the loss of every step.
std::vector<double> train_serial(SerialMlp& mlp, OptimizerKind kind, int steps) {
  std::vector<AnyOptimizer> optimizers(stages, AnyOptimizer{kind});
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    mlp.zero_gradients();
    losses.push_back(mlp.accumulate_gradients(inputs(), targets(), 1.0 / (static_cast<double>(rows) * output_width)));
    for (std::size_t l = 0; l < stages; ++l) optimizers[l].step(parameters_of(mlp.layers[l]));
  }
  return losses;
}

/// The seed's training, serially: P's table run cycle by cycle, each stage updating its layer
/// right after each backward with that micro-batch's mean squared error.
template <typename P>
std::vector<double> train_serial_per_micro_batch(SerialMlp& mlp, OptimizerKind kind, int steps) {
  std::vector<AnyOptimizer> optimizers(stages, AnyOptimizer{kind});
  std::vector<double> losses;
  // act[i][r]: the input of stage i for micro-batch r (act[S][r]: the output); grad[i][r]: its gradient.
  std::array<std::array<MatrixXd, micro_batches>, stages + 1> act, grad;
  for (int step = 0; step < steps; ++step) {
    double loss = 0;
    for (int cycle = 0; cycle < P::cycles; ++cycle)
      for (int i = 0; i < stages; ++i) {
        const PipelineStep s = P::step(i, cycle);
        if (s.action == PipelineAction::idle) continue;
        const auto r = static_cast<std::size_t>(s.micro_batch);
        const auto l = static_cast<std::size_t>(i);
        SerialDense& layer = mlp.layers[l];
        const std::int64_t begin = detail::block_begin(rows, micro_batches, s.micro_batch);
        const std::int64_t n = detail::block_size(rows, micro_batches, s.micro_batch);
        if (s.action == PipelineAction::forward) {
          if (i == 0) act[0][r] = inputs().middleRows(begin, n);
          act[l + 1][r] = layer.forward(act[l][r]);
          if (i + 1 == stages) {
            const double scale = n > 0 ? 1.0 / (static_cast<double>(n) * output_width) : 0.0;
            const MatrixXd diff = act[stages][r] - targets().middleRows(begin, n);
            loss += scale * diff.squaredNorm();
            grad[stages][r] = 2.0 * scale * diff;
          }
        } else {
          grad[l][r] = layer.backward(act[l][r], act[l + 1][r], grad[l + 1][r]);  // with the weights before this update
          optimizers[l].step(parameters_of(layer));
        }
      }
    losses.push_back(loss / micro_batches);
  }
  return losses;
}

template <typename P>
MlpRunResult train(ProcessGroupMesh<MlpMesh>& groups, const CommCounters* counters, OptimizerKind kind,
                   bool per_micro_batch, int steps) {
  const Model model = initial_model();
  SerialMlp reference = serial_model();
  const std::vector<double> serial_losses = per_micro_batch ? train_serial_per_micro_batch<P>(reference, kind, steps)
                                                            : train_serial(reference, kind, steps);

  PipelinedMlp<double, P> mlp(groups, "pp", std::span<const MatrixXd>(model.w), std::span<const VectorXd>(model.b));
  AnyOptimizer optimizer{kind};
  const PipelineMatrix<double> x = inputs(), t = targets();
  const int stage = mlp.stage();
  MlpRunResult result;
  result.modeled_per_step = PipelineEngine<P, DenseRelu<double>>::send_traffic(
      stage, rows, widths[static_cast<std::size_t>(stage)], widths[static_cast<std::size_t>(stage) + 1], sizeof(double));
  const bool last = stage + 1 == stages;
  for (int step = 0; step < steps; ++step) {
    const Traffic before = counters ? counters->point_to_point.traffic : Traffic{};
    const double loss = mlp.train_step(rows, x, t, optimizer,
                                       per_micro_batch ? UpdateMode::per_micro_batch : UpdateMode::per_batch);
    const Traffic sent = (counters ? counters->point_to_point.traffic : Traffic{}) - before;
    if (step == 0 || !(result.measured_per_step == result.modeled_per_step)) result.measured_per_step = sent;
    if (last) {
      result.loss_error = std::max(result.loss_error, std::abs(loss - serial_losses[static_cast<std::size_t>(step)]));
      if (step == 0) result.first_loss = loss;
      result.last_loss = loss;
    }
  }
  const SerialDense& want = reference.layers[static_cast<std::size_t>(stage)];
  result.weight_error = std::max((mlp.layer().weight() - want.w).cwiseAbs().maxCoeff(),
                                 (mlp.layer().bias() - want.b).cwiseAbs().maxCoeff());
  return result;
}

}  // namespace

MlpRunResult run_mlp_training(ProcessGroupMesh<MlpMesh>& groups, const CommCounters* counters, ScheduleKind schedule,
                              OptimizerKind optimizer, bool per_micro_batch, int steps) {
  MlpRunResult result = schedule == ScheduleKind::gpipe
                            ? train<Pipeline<stages, micro_batches, schedule::GPipe>>(groups, counters, optimizer,
                                                                                     per_micro_batch, steps)
                            : train<Pipeline<stages, micro_batches, schedule::OneFOneB>>(groups, counters, optimizer,
                                                                                        per_micro_batch, steps);
  result.label = std::string(schedule == ScheduleKind::gpipe ? "GPipe" : "1F1B") + ", " +
                 (optimizer == OptimizerKind::sgd ? "SGD" : "Adam") + ", " +
                 (per_micro_batch ? "update per micro-batch" : "update per batch");
  return result;
}

template <typename M>
std::string mlp_wrong_stage_count_problem(ProcessGroupMesh<M>& groups) {
  const Model model = initial_model();
  try {
    PipelinedMlp<double, Pipeline<stages, micro_batches, schedule::GPipe>> mlp(
        groups, "pp", std::span<const MatrixXd>(model.w), std::span<const VectorXd>(model.b));
    return "a 4-stage MLP was built over an axis of extent " + std::to_string(groups.mesh().extent("pp"));
  } catch (const std::invalid_argument&) {
    return "";
  }
}
template std::string mlp_wrong_stage_count_problem(ProcessGroupMesh<Mesh<Axis<"pp", 3>>>& groups);

}  // namespace shardwise::testing
