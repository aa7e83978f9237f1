/// @file
/// shardwise/nn/mlp.hpp: pipeline stages (Dense+ReLU, and a sharded FeedForward) and the
/// pipelined MLP (S Dense+ReLU stages, MSE loss on the last).
///
/// ```cpp
///   using P = sw::Pipeline<4, 8, sw::schedule::OneFOneB>;
///   sw::PipelinedMlp<double, P> mlp(groups, "pp", weights, biases);   // stage = my index on "pp"
///   sw::Adam<double> adam(1e-3);
///   double loss = mlp.train_step(rows, inputs, targets, adam);        // accumulate, then one update
///   mlp.train_step(rows, inputs, targets, adam, sw::UpdateMode::per_micro_batch);  // update after each micro-batch
/// ```
///
/// PipelinedMlp: S Dense+ReLU layers, layer i on stage i of a mesh axis, y = ReLU(x W + b)
/// everywhere (the last layer too), MSE loss on the last stage. In the
/// default mode the gradients of the R micro-batches are accumulated (each weighted by
/// 1 / (rows * width), so the sum is the gradient of the batch's mean squared error) and
/// every stage then makes one optimizer step: the result equals serial training on the
/// whole batch. UpdateMode::per_micro_batch is the other common behaviour: each stage updates its
/// layer right after the backward of every micro-batch, with that micro-batch's own mean
/// squared error, so later forwards (and backwards) see weights that earlier micro-batches
/// already changed, exactly in the order the schedule runs them.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "shardwise/kernels/gemm.hpp"
#include "shardwise/nn/feed_forward.hpp"
#include "shardwise/nn/optimizer.hpp"
#include "shardwise/nn/pipeline.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace shardwise {

/// A Dense+ReLU layer as a pipeline stage: y = ReLU(x W + b), W: [in, out], b: [out].
template <typename Scalar>
class DenseRelu {
 public:
  /// The scalar of weights and activations.
  using scalar_type = Scalar;
  /// Activations and their gradients: rows are samples, row-major (PipelineMatrix).
  using matrix = PipelineMatrix<Scalar>;
  /// W and its gradient, column-major.
  using weight_matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  /// b and its gradient.
  using vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  /// A layer with the given weight and bias (b.size() == W.cols()).
  DenseRelu(weight_matrix weight, vector bias)
      : weight_(std::move(weight)),
        bias_(std::move(bias)),
        weight_grad_(weight_matrix::Zero(weight_.rows(), weight_.cols())),
        bias_grad_(vector::Zero(bias_.size())) {
    if (bias_.size() != weight_.cols())
      throw std::invalid_argument("shardwise::DenseRelu: the bias has " + std::to_string(bias_.size()) +
                                  " entries but W has " + std::to_string(weight_.cols()) + " columns");
  }

  /// Widths of x and y (W's rows and columns).
  ///@{
  [[nodiscard]] std::int64_t input_width() const noexcept { return weight_.rows(); }
  [[nodiscard]] std::int64_t output_width() const noexcept { return weight_.cols(); }
  ///@}

  /// out = ReLU(in W + b); keeps in and out for backward(micro_batch, ...).
  void forward(int micro_batch, const matrix& in, matrix& out) {
    Slot& slot = slot_of(micro_batch);
    const std::int64_t n = in.rows();
    slot.input = in;
    out.resize(n, output_width());
    detail::gemm<Scalar, Eigen::RowMajor, Eigen::ColMajor, Eigen::RowMajor>(
        out.data(), detail::block_ref<Scalar, Eigen::RowMajor>::whole(in.data(), n, input_width()),
        detail::block_ref<Scalar, Eigen::ColMajor>::whole(weight_.data(), input_width(), output_width()), false);
    out.rowwise() += bias_.transpose();
    out = out.cwiseMax(Scalar(0));
    slot.output = out;
  }

  /// Adds dW = x^T dz and db = sum(dz), dz = grad_out through the ReLU; grad_in = dz W^T.
  void backward(int micro_batch, const matrix& grad_out, matrix* grad_in) {
    Slot& slot = slot_of(micro_batch);
    const std::int64_t n = grad_out.rows();
    dz_ = (slot.output.array() > Scalar(0)).select(grad_out, Scalar(0));
    detail::gemm<Scalar, Eigen::ColMajor, Eigen::RowMajor, Eigen::ColMajor>(
        weight_grad_.data(), detail::transposed<Scalar, Eigen::RowMajor>(slot.input.data(), n, input_width()),
        detail::block_ref<Scalar, Eigen::RowMajor>::whole(dz_.data(), n, output_width()), true);
    bias_grad_ += dz_.colwise().sum().transpose();
    if (grad_in == nullptr) return;
    grad_in->resize(n, input_width());
    detail::gemm<Scalar, Eigen::RowMajor, Eigen::RowMajor, Eigen::RowMajor>(
        grad_in->data(), detail::block_ref<Scalar, Eigen::RowMajor>::whole(dz_.data(), n, output_width()),
        detail::transposed<Scalar, Eigen::ColMajor>(weight_.data(), input_width(), output_width()), false);
  }

  /// The parameters, and their gradients summed over every backward() since zero_grad().
  ///@{
  [[nodiscard]] const weight_matrix& weight() const noexcept { return weight_; }
  [[nodiscard]] const vector& bias() const noexcept { return bias_; }
  [[nodiscard]] const weight_matrix& weight_gradient() const noexcept { return weight_grad_; }
  [[nodiscard]] const vector& bias_gradient() const noexcept { return bias_grad_; }
  ///@}

  /// Sets the gradients to zero.
  void zero_grad() {
    weight_grad_.setZero();
    bias_grad_.setZero();
  }
  /// (value, gradient) views for the optimizers: W, b.
  [[nodiscard]] std::array<ParameterRef<Scalar>, 2> parameters() {
    return {ParameterRef<Scalar>{span(weight_), span(weight_grad_)}, ParameterRef<Scalar>{span(bias_), span(bias_grad_)}};
  }

 private:
  struct Slot {
    matrix input, output;
  };
  Slot& slot_of(int micro_batch) {
    if (micro_batch < 0) throw std::out_of_range("shardwise::DenseRelu: negative micro-batch index");
    if (static_cast<std::size_t>(micro_batch) >= slots_.size()) slots_.resize(static_cast<std::size_t>(micro_batch) + 1);
    return slots_[static_cast<std::size_t>(micro_batch)];
  }
  template <typename M>
  static std::span<Scalar> span(M& m) {
    return {m.data(), static_cast<std::size_t>(m.size())};
  }

  weight_matrix weight_;
  vector bias_;
  weight_matrix weight_grad_;
  vector bias_grad_;
  std::vector<Slot> slots_;  // per micro-batch
  matrix dz_;
};

/// A sharded FeedForward as a pipeline stage. Whole activations travel between stages, so the
/// layer must keep X and Y replicated over its axes: policy Unsharded or MegatronTP (each
/// tensor-parallel rank sends its copy to its peer in the next stage).
template <typename Ffn>
class FeedForwardStage {
  static_assert(std::is_same_v<typename Ffn::policy, ffn_policy::Unsharded> ||
                    std::is_same_v<typename Ffn::policy, ffn_policy::MegatronTP>,
                "shardwise::FeedForwardStage: a pipeline stage passes whole activations, so its FeedForward must "
                "keep X and Y replicated: use policy Unsharded or MegatronTP");

 public:
  /// The layer's scalar (float or double).
  using scalar_type = typename Ffn::scalar_type;
  /// Activations and their gradients between stages: rows are samples, row-major.
  using matrix = PipelineMatrix<scalar_type>;

  /// The stage runs `layer` (which must outlive it) on activations [rows, 1, m].
  explicit FeedForwardStage(Ffn& layer)
      : layer_(&layer),
        x_(layer.groups(), 0, 1, layer.model_width()),
        y_(layer.groups(), 0, 1, layer.model_width()),
        dy_(layer.groups(), 0, 1, layer.model_width()),
        dx_(layer.groups(), 0, 1, layer.model_width()) {}

  /// Both are the layer's model width m.
  ///@{
  [[nodiscard]] std::int64_t input_width() const noexcept { return layer_->model_width(); }
  [[nodiscard]] std::int64_t output_width() const noexcept { return layer_->model_width(); }
  ///@}

  /// out = the layer's Y for X = in (rows x 1 x m), keeping the layer's cache for micro_batch.
  void forward(int micro_batch, const matrix& in, matrix& out) {
    x_.reshape(in.rows(), 1, input_width());
    y_.reshape(in.rows(), 1, output_width());
    x_.local() = in;
    layer_->forward_into(y_, x_, cache_of(micro_batch));
    out = y_.local();
  }

  /// Adds the layer's gradients for dY = grad_out; writes dX unless grad_in is null (then no dX collective).
  void backward(int micro_batch, const matrix& grad_out, matrix* grad_in) {
    dy_.reshape(grad_out.rows(), 1, output_width());
    dy_.local() = grad_out;
    if (grad_in == nullptr) {
      layer_->backward_into(nullptr, dy_, cache_of(micro_batch));
      return;
    }
    dx_.reshape(grad_out.rows(), 1, input_width());
    layer_->backward_into(&dx_, dy_, cache_of(micro_batch));
    *grad_in = dx_.local();
  }

  /// The FeedForward this stage runs.
  [[nodiscard]] Ffn& layer() noexcept { return *layer_; }

 private:
  typename Ffn::Cache& cache_of(int micro_batch) {
    if (micro_batch < 0) throw std::out_of_range("shardwise::FeedForwardStage: negative micro-batch index");
    if (static_cast<std::size_t>(micro_batch) >= caches_.size()) caches_.resize(static_cast<std::size_t>(micro_batch) + 1);
    return caches_[static_cast<std::size_t>(micro_batch)];
  }

  Ffn* layer_;
  typename Ffn::input_type x_;
  typename Ffn::output_type y_;
  typename Ffn::output_type dy_;
  typename Ffn::input_type dx_;
  std::vector<typename Ffn::Cache> caches_;  // per micro-batch
};

/// When the optimizer runs during a training step.
enum class UpdateMode {
  per_batch,        ///< accumulate the R micro-batches' gradients, then one step (= serial training)
  per_micro_batch,  ///< a step after every micro-batch's backward, on each stage
};

/// The pipelined MLP: S Dense+ReLU layers on the S ranks of a mesh axis.
template <typename Scalar, typename P>
class PipelinedMlp {
 public:
  /// Inputs and targets: rows are samples, row-major.
  using matrix = PipelineMatrix<Scalar>;
  /// A layer's weight W and bias b, as DenseRelu takes them.
  ///@{
  using weight_matrix = typename DenseRelu<Scalar>::weight_matrix;
  using vector = typename DenseRelu<Scalar>::vector;
  ///@}

  /// Layer i (weights[i]: [w_i, w_{i+1}], biases[i]: [w_{i+1}]) goes to the rank with index i on
  /// `axis`, whose extent must be P::stages. Every rank passes all layers (each keeps its own).
  template <MeshType M>
  PipelinedMlp(ProcessGroupMesh<M>& groups, std::string_view axis, std::span<const weight_matrix> weights,
               std::span<const vector> biases)
      : layer_(pick(groups, axis, weights, biases)),
        engine_(groups.group_along(std::span<const std::string_view>(&axis, 1)), layer_) {}

  PipelinedMlp(const PipelinedMlp&) = delete;  // the engine points at the layer
  PipelinedMlp& operator=(const PipelinedMlp&) = delete;

  /// One training step on a batch of `rows` rows (inputs on the first stage, targets on the
  /// last; see PipelineEngine::run) with this stage's `optimizer`. Returns the loss on the last
  /// stage (the batch's mean squared error; per micro-batch: the mean of the micro-batches'),
  /// 0 elsewhere.
  template <typename Optimizer>
  double train_step(std::int64_t rows, const Eigen::Ref<const matrix>& inputs, const Eigen::Ref<const matrix>& targets,
                    Optimizer& optimizer, UpdateMode mode = UpdateMode::per_batch) {
    const auto width = static_cast<double>(layer_.output_width());
    layer_.zero_grad();
    if (mode == UpdateMode::per_batch) {
      const double scale = rows > 0 ? 1.0 / (static_cast<double>(rows) * width) : 0.0;
      const double loss = engine_.run(rows, inputs, targets, [&](int) { return scale; }, [](int) {});
      optimizer.step(layer_.parameters());
      return loss;
    }
    auto scale = [&](int r) {
      const auto n = static_cast<double>(decltype(engine_)::micro_batch_rows(rows, r));
      return n > 0 ? 1.0 / (n * width) : 0.0;
    };
    const double loss = engine_.run(rows, inputs, targets, scale, [&](int) {
      optimizer.step(layer_.parameters());
      layer_.zero_grad();
    });
    return loss / P::micro_batches;
  }

  /// This rank's layer, its stage index, and the engine that runs the schedule.
  ///@{
  [[nodiscard]] DenseRelu<Scalar>& layer() noexcept { return layer_; }
  [[nodiscard]] int stage() const noexcept { return engine_.stage(); }
  [[nodiscard]] PipelineEngine<P, DenseRelu<Scalar>>& engine() noexcept { return engine_; }
  ///@}

 private:
  template <MeshType M>
  static DenseRelu<Scalar> pick(ProcessGroupMesh<M>& groups, std::string_view axis, std::span<const weight_matrix> weights,
                                std::span<const vector> biases) {
    if (weights.size() != static_cast<std::size_t>(P::stages) || biases.size() != weights.size())
      throw std::invalid_argument("shardwise::PipelinedMlp: the pipeline has " + std::to_string(P::stages) +
                                  " stages but " + std::to_string(weights.size()) + " weights and " +
                                  std::to_string(biases.size()) + " biases were given; give one layer per stage");
    const int extent = groups.group_size(std::span<const std::string_view>(&axis, 1));
    if (extent != P::stages)
      throw std::invalid_argument("shardwise::PipelinedMlp: the pipeline has " + std::to_string(P::stages) +
                                  " stages but axis \"" + std::string(axis) + "\" has extent " + std::to_string(extent));
    for (std::size_t i = 0; i + 1 < weights.size(); ++i)
      if (weights[i].cols() != weights[i + 1].rows())
        throw std::invalid_argument("shardwise::PipelinedMlp: layer " + std::to_string(i) + " gives " +
                                    std::to_string(weights[i].cols()) + " outputs but layer " + std::to_string(i + 1) +
                                    " takes " + std::to_string(weights[i + 1].rows()) + " inputs");
    const auto stage = static_cast<std::size_t>(groups.group_rank(std::span<const std::string_view>(&axis, 1)));
    return DenseRelu<Scalar>(weights[stage], biases[stage]);
  }

  DenseRelu<Scalar> layer_;
  PipelineEngine<P, DenseRelu<Scalar>> engine_;
};

}  // namespace shardwise
