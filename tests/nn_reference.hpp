// Serial Eigen references for the nn tests: the FeedForward (forward and backward, with a
// finite-difference check of its gradients), a Dense+ReLU MLP trained on whole batches, and
// the same MLP trained the seed's way (an update after every micro-batch's backward, in the
// order a pipeline schedule runs them). All in double, on whole matrices.
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

  [[nodiscard]] Pass forward(const MatrixXd& x) const {
    Pass p;
    p.x = x;
    p.h = ((x * w1).rowwise() + b1.transpose()).cwiseMax(0.0);
    p.y = (p.h * w2).rowwise() + b2.transpose();
    return p;
  }
  [[nodiscard]] Gradients backward(const Pass& p, const MatrixXd& dy) const {
    Gradients g;
    g.db2 = dy.colwise().sum().transpose();
    g.dw2 = p.h.transpose() * dy;
    const MatrixXd dh = ((dy * w2.transpose()).array() * (p.h.array() > 0.0).cast<double>()).matrix();
    g.db1 = dh.colwise().sum().transpose();
    g.dw1 = p.x.transpose() * dh;
    g.dx = dh * w1.transpose();
    return g;
  }
};

/// Largest |analytic - central difference| / max(1, |analytic|) over every entry of X, W1,
/// b1, W2, b2, for the loss sum(Y .* G) (whose dY is G).
inline double ffn_finite_difference_error(SerialFfn ffn, const MatrixXd& x, const MatrixXd& g, double step = 1e-6) {
  auto loss = [&](const SerialFfn& f, const MatrixXd& input) { return (f.forward(input).y.array() * g.array()).sum(); };
  const auto grads = ffn.backward(ffn.forward(x), g);
  double worst = 0.0;
  auto check = [&](double analytic, auto&& perturb) {
    const double up = perturb(step), down = perturb(-step);
    const double numeric = (up - down) / (2 * step);
    worst = std::max(worst, std::abs(analytic - numeric) / std::max(1.0, std::abs(analytic)));
  };
  MatrixXd xp = x;
  for (Eigen::Index i = 0; i < x.size(); ++i)
    check(grads.dx(i), [&](double e) { xp(i) = x(i) + e; const double l = loss(ffn, xp); xp(i) = x(i); return l; });
  auto params = [&](auto member, const auto& gradient) {
    auto& p = ffn.*member;
    for (Eigen::Index i = 0; i < p.size(); ++i) {
      const double saved = p(i);
      check(gradient(i), [&](double e) { p(i) = saved + e; const double l = loss(ffn, x); p(i) = saved; return l; });
    }
  };
  params(&SerialFfn::w1, grads.dw1);
  params(&SerialFfn::b1, grads.db1);
  params(&SerialFfn::w2, grads.dw2);
  params(&SerialFfn::b2, grads.db2);
  return worst;
}

/// One Dense+ReLU layer: y = ReLU(x W + b).
struct SerialDense {
  MatrixXd w;
  VectorXd b;
  MatrixXd dw;
  VectorXd db;
};

/// A stack of Dense+ReLU layers with an MSE loss, trained on whole matrices.
struct SerialMlp {
  std::vector<SerialDense> layers;

  /// Activations: input, then every layer's output.
  [[nodiscard]] std::vector<MatrixXd> forward(const MatrixXd& x, std::size_t first = 0,
                                              std::size_t last = static_cast<std::size_t>(-1)) const {
    std::vector<MatrixXd> a{x};
    for (std::size_t l = first; l < std::min(last, layers.size()); ++l)
      a.push_back(((a.back() * layers[l].w).rowwise() + layers[l].b.transpose()).cwiseMax(0.0));
    return a;
  }
  /// Adds the gradients of loss = scale * sum((y - t)^2) to dw, db; returns the loss.
  double accumulate_gradients(const MatrixXd& x, const MatrixXd& t, double scale) {
    const auto a = forward(x);
    MatrixXd dy = 2.0 * scale * (a.back() - t);
    for (std::size_t l = layers.size(); l-- > 0;) {
      const MatrixXd dz = (dy.array() * (a[l + 1].array() > 0.0).cast<double>()).matrix();
      layers[l].dw += a[l].transpose() * dz;
      layers[l].db += dz.colwise().sum().transpose();
      dy = dz * layers[l].w.transpose();
    }
    return scale * (a.back() - t).squaredNorm();
  }
  void zero_gradients() {
    for (auto& l : layers) {
      l.dw.setZero(l.w.rows(), l.w.cols());
      l.db.setZero(l.b.size());
    }
  }
};

}  // namespace shardwise::testing
