// Serial Eigen references for the nn tests: the FeedForward (forward and backward, with a
// finite-difference check of its gradients) and a Dense+ReLU MLP, in double, on whole
// matrices. Defined once, in nn_reference.cpp: Eigen's products are the most expensive code
// to compile (above all under sanitizers), so no other test translation unit instantiates one.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace shardwise::testing {

using MatrixXd = Eigen::MatrixXd;
using VectorXd = Eigen::VectorXd;

/// The same pseudo-random matrix on every rank (entries in [lo, hi]).
inline MatrixXd uniform_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed, double lo = -1.0,
                               double hi = 1.0) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  MatrixXd m(rows, cols);
  for (Eigen::Index j = 0; j < m.cols(); ++j)
    for (Eigen::Index i = 0; i < m.rows(); ++i) m(i, j) = uniform(engine);
  return m;
}

/// Y = ReLU(X W1 + b1) W2 + b2 on whole matrices (rows are tokens).
struct SerialFfn {
  MatrixXd w1, w2;
  VectorXd b1, b2;

  struct Pass {
    MatrixXd x, h, y;
  };
  struct Gradients {
    MatrixXd dx, dw1, dw2;
    VectorXd db1, db2;
  };

  [[nodiscard]] Pass forward(const MatrixXd& x) const;
  [[nodiscard]] Gradients backward(const Pass& p, const MatrixXd& dy) const;
};

/// Largest |analytic - central difference| / max(1, |analytic|) over every entry of X, W1,
/// b1, W2, b2, for the loss sum(Y .* G) (whose dY is G).
double ffn_finite_difference_error(SerialFfn ffn, const MatrixXd& x, const MatrixXd& g, double step = 1e-6);

/// One Dense+ReLU layer: y = ReLU(x W + b), with its gradients.
struct SerialDense {
  MatrixXd w;
  VectorXd b;
  MatrixXd dw;
  VectorXd db;

  [[nodiscard]] MatrixXd forward(const MatrixXd& x) const;
  /// Sets dw, db from the input x, the output y and the output's gradient dy; returns dx
  /// (computed with the current weights).
  MatrixXd backward(const MatrixXd& x, const MatrixXd& y, const MatrixXd& dy);
};

/// A stack of Dense+ReLU layers with an MSE loss, trained on whole matrices.
struct SerialMlp {
  std::vector<SerialDense> layers;

  /// Adds the gradients of loss = scale * sum((y - t)^2) to dw, db; returns the loss.
  double accumulate_gradients(const MatrixXd& x, const MatrixXd& t, double scale);
  void zero_gradients();
};

}  // namespace shardwise::testing
