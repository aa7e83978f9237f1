// The serial references (nn_reference.hpp), compiled once.
#include "nn_reference.hpp"


namespace shardwise::testing {

SerialFfn::Pass SerialFfn::forward(const MatrixXd& x) const {
  Pass p;
  p.x = x;
  p.h = ((x * w1).rowwise() + b1.transpose()).cwiseMax(0.0);
  p.y = (p.h * w2).rowwise() + b2.transpose();
  return p;
}

SerialFfn::Gradients SerialFfn::backward(const Pass& p, const MatrixXd& dy) const {
  Gradients g;
  g.db2 = dy.colwise().sum().transpose();
  g.dw2 = p.h.transpose() * dy;
  const MatrixXd dh = ((dy * w2.transpose()).array() * (p.h.array() > 0.0).cast<double>()).matrix();
  g.db1 = dh.colwise().sum().transpose();
  g.dw1 = p.x.transpose() * dh;
  g.dx = dh * w1.transpose();
  return g;
}

double ffn_finite_difference_error(SerialFfn ffn, const MatrixXd& x, const MatrixXd& g, double step) {
  auto loss = [&](const SerialFfn& f, const MatrixXd& input) { return (f.forward(input).y.array() * g.array()).sum(); };
  const auto grads = ffn.backward(ffn.forward(x), g);
  double worst = 0.0;
  auto check = [&](double analytic, auto&& perturb) {
    const double numeric = (perturb(step) - perturb(-step)) / (2 * step);
    worst = std::max(worst, std::abs(analytic - numeric) / std::max(1.0, std::abs(analytic)));
  };
  MatrixXd xp = x;
  for (Eigen::Index i = 0; i < x.size(); ++i)
    check(grads.dx(i), [&](double e) {
      xp(i) = x(i) + e;
      const double l = loss(ffn, xp);
      xp(i) = x(i);
      return l;
    });
  auto params = [&](auto member, const auto& gradient) {
    auto& p = ffn.*member;
    for (Eigen::Index i = 0; i < p.size(); ++i) {
      const double saved = p(i);
      check(gradient(i), [&](double e) {
        p(i) = saved + e;
        const double l = loss(ffn, x);
        p(i) = saved;
        return l;
      });
    }
  };
  params(&SerialFfn::w1, grads.dw1);
  params(&SerialFfn::b1, grads.db1);
  params(&SerialFfn::w2, grads.dw2);
  params(&SerialFfn::b2, grads.db2);
  return worst;
}

MatrixXd SerialDense::forward(const MatrixXd& x) const { return ((x * w).rowwise() + b.transpose()).cwiseMax(0.0); }

MatrixXd SerialDense::backward(const MatrixXd& x, const MatrixXd& y, const MatrixXd& dy) {
  const MatrixXd dz = (dy.array() * (y.array() > 0.0).cast<double>()).matrix();
  dw = x.transpose() * dz;
  db = dz.colwise().sum().transpose();
  return dz * w.transpose();
}

double SerialMlp::accumulate_gradients(const MatrixXd& x, const MatrixXd& t, double scale) {
  std::vector<MatrixXd> a{x};
  for (const SerialDense& layer : layers) a.push_back(layer.forward(a.back()));
  MatrixXd dy = 2.0 * scale * (a.back() - t);
  for (std::size_t l = layers.size(); l-- > 0;) {
    const MatrixXd dw = layers[l].dw, db = layers[l].db;
    dy = layers[l].backward(a[l], a[l + 1], dy);
    layers[l].dw += dw;
    layers[l].db += db;
  }
  return scale * (a.back() - t).squaredNorm();
}

void SerialMlp::zero_gradients() {
  for (auto& l : layers) {
    l.dw.setZero(l.w.rows(), l.w.cols());
    l.db.setZero(l.b.size());
  }
}

}  // namespace shardwise::testing
