/// @file
/// shardwise/nn/optimizer.hpp: parameters with their gradients, and the optimizers (SGD, Adam).
///
/// A layer exposes its trainable tensors as ParameterRef views: this rank's shard of the
/// value and of the gradient, as flat contiguous ranges. The optimizers are elementwise,
/// so each rank updates its own shards with no communication, given complete gradients
/// (a layer's backward makes them complete over the axes its shardings name; data-parallel
/// replicas add theirs with all_reduce_gradients first). Optimizer state is kept per
/// parameter, in the order of the list, and sized on the first step: pass the same list,
/// in the same order, every time.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "shardwise/comm/any_communicator.hpp"

namespace shardwise {

/// This rank's shard of one trainable tensor and of its gradient (same size, contiguous).
template <typename Scalar>
struct ParameterRef {
  /// The parameter's values, which the optimizer updates in place.
  std::span<Scalar> value;
  /// The gradient of the loss with respect to `value`, element for element.
  std::span<Scalar> gradient;
};

/// Sets every gradient to zero (before accumulating a new batch).
template <typename Scalar>
void zero_gradients(std::span<const ParameterRef<Scalar>> parameters) {
  for (const auto& p : parameters) std::fill(p.gradient.begin(), p.gradient.end(), Scalar(0));
}

/// Sums the gradients over `comm` (the data-parallel group) in ONE AllReduce: the gradients
/// are packed into `buffer` (grown as needed, reused across calls), reduced and unpacked.
template <typename Scalar>
void all_reduce_gradients(AnyCommunicator& comm, std::span<const ParameterRef<Scalar>> parameters,
                          std::vector<Scalar>& buffer) {
  std::size_t total = 0;
  for (const auto& p : parameters) total += p.gradient.size();
  buffer.resize(total);
  auto packed = buffer.begin();
  for (const auto& p : parameters) packed = std::copy(p.gradient.begin(), p.gradient.end(), packed);
  comm.all_reduce(std::span<Scalar>(buffer.data(), total));
  auto unpacked = buffer.cbegin();
  for (const auto& p : parameters) {
    std::copy_n(unpacked, p.gradient.size(), p.gradient.begin());
    unpacked += static_cast<std::ptrdiff_t>(p.gradient.size());
  }
}

namespace detail {

/// Checks that the parameter list has the layout the optimizer state was made for.
template <typename Scalar>
void check_layout(const char* who, std::vector<std::size_t>& sizes, std::span<const ParameterRef<Scalar>> parameters) {
  for (std::size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i].value.size() != parameters[i].gradient.size())
      throw std::invalid_argument(std::string("shardwise::") + who + ": parameter " + std::to_string(i) + " has " +
                                  std::to_string(parameters[i].value.size()) + " values but " +
                                  std::to_string(parameters[i].gradient.size()) + " gradient entries");
  if (sizes.empty()) {
    for (const auto& p : parameters) sizes.push_back(p.value.size());
    return;
  }
  bool same = sizes.size() == parameters.size();
  for (std::size_t i = 0; same && i < sizes.size(); ++i) same = sizes[i] == parameters[i].value.size();
  if (!same)
    throw std::invalid_argument(std::string("shardwise::") + who +
                                ": the parameter list differs from the first step's (count or sizes); an optimizer "
                                "keeps state per parameter, so pass the same list in the same order every step");
}

template <typename Scalar>
using flat_array = Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>>;

template <typename Scalar>
flat_array<Scalar> as_array(std::span<Scalar> s) {
  return {s.data(), static_cast<Eigen::Index>(s.size())};
}

}  // namespace detail

/// Stochastic gradient descent, optionally with (PyTorch-style) momentum:
/// v = momentum * v + g;  p -= learning_rate * v   (v = g when momentum is 0).
template <typename Scalar>
class Sgd {
 public:
  /// Throws std::invalid_argument unless learning_rate > 0 and 0 <= momentum < 1.
  explicit Sgd(double learning_rate, double momentum = 0.0) : learning_rate_(learning_rate), momentum_(momentum) {
    if (!(learning_rate > 0.0) || momentum < 0.0 || momentum >= 1.0)
      throw std::invalid_argument("shardwise::Sgd: needs learning_rate > 0 and 0 <= momentum < 1");
  }

  /// One update of every parameter from its gradient.
  void step(std::span<const ParameterRef<Scalar>> parameters) {
    detail::check_layout("Sgd::step", sizes_, parameters);
    if (momentum_ != 0.0 && velocity_.empty())
      for (const auto& p : parameters) velocity_.emplace_back(p.value.size(), Scalar(0));
    const auto lr = static_cast<Scalar>(learning_rate_);
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      auto value = detail::as_array(parameters[i].value);
      auto gradient = detail::as_array(parameters[i].gradient);
      if (momentum_ == 0.0) {
        value -= lr * gradient;
      } else {
        auto v = detail::as_array(std::span<Scalar>(velocity_[i]));
        v = static_cast<Scalar>(momentum_) * v + gradient;
        value -= lr * v;
      }
    }
  }

  /// The step size given to the constructor.
  [[nodiscard]] double learning_rate() const noexcept { return learning_rate_; }

 private:
  double learning_rate_, momentum_;
  std::vector<std::size_t> sizes_;
  std::vector<std::vector<Scalar>> velocity_;
};

/// Adam (Kingma and Ba), as PyTorch writes it, with bias correction:
/// m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  t += 1;
/// p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
template <typename Scalar>
class Adam {
 public:
  /// Adam's hyperparameters, with PyTorch's defaults.
  struct Options {
    double learning_rate = 1e-3;  ///< step size (lr)
    double beta1 = 0.9;           ///< decay of the first-moment average m (b1)
    double beta2 = 0.999;         ///< decay of the second-moment average v (b2)
    double epsilon = 1e-8;        ///< added to sqrt(v) against division by zero (eps)
  };

  /// Throws std::invalid_argument unless learning_rate > 0, 0 <= beta1, beta2 < 1 and epsilon > 0.
  explicit Adam(Options options) : options_(options) {
    if (!(options.learning_rate > 0.0) || !(options.beta1 >= 0.0 && options.beta1 < 1.0) ||
        !(options.beta2 >= 0.0 && options.beta2 < 1.0) || !(options.epsilon > 0.0))
      throw std::invalid_argument("shardwise::Adam: needs learning_rate > 0, 0 <= beta1, beta2 < 1 and epsilon > 0");
  }
  /// The default Options with another learning rate.
  explicit Adam(double learning_rate) : Adam(Options{learning_rate}) {}

  /// One update of every parameter from its gradient.
  void step(std::span<const ParameterRef<Scalar>> parameters) {
    detail::check_layout("Adam::step", sizes_, parameters);
    if (first_.empty())
      for (const auto& p : parameters) {
        first_.emplace_back(p.value.size(), Scalar(0));
        second_.emplace_back(p.value.size(), Scalar(0));
      }
    ++steps_;
    const double correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
    const double correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(steps_));
    const auto b1 = static_cast<Scalar>(options_.beta1), b2 = static_cast<Scalar>(options_.beta2);
    const auto step_size = static_cast<Scalar>(options_.learning_rate / correction1);
    const auto root2 = static_cast<Scalar>(std::sqrt(correction2));
    const auto eps = static_cast<Scalar>(options_.epsilon);
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      auto value = detail::as_array(parameters[i].value);
      auto g = detail::as_array(parameters[i].gradient);
      auto m = detail::as_array(std::span<Scalar>(first_[i]));
      auto v = detail::as_array(std::span<Scalar>(second_[i]));
      m = b1 * m + (Scalar(1) - b1) * g;
      v = b2 * v + (Scalar(1) - b2) * g.square();
      value -= step_size * m / (v.sqrt() / root2 + eps);
    }
  }

  /// Updates made so far (t).
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  /// The hyperparameters given to the constructor.
  [[nodiscard]] const Options& options() const noexcept { return options_; }

 private:
  Options options_;
  std::int64_t steps_ = 0;
  std::vector<std::size_t> sizes_;
  std::vector<std::vector<Scalar>> first_, second_;
};

}  // namespace shardwise
