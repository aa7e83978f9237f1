// One forward and backward pass of multi-head self-attention on sharded tensors, every product
// an sw::einsum. Shared by examples/attention.cpp (which checks it against serial Eigen and
// counts its traffic) and benchmarks/einsum_bench.cpp (which times it, sharded and unsharded).
//
//   Q, K, V = X Wq, X Wk, X Wv       "bqm,mhd->bhqd"   X[b, s, m], W[m, h, d]
//   P = softmax(Q K^T / sqrt(d))     "bhqd,bhkd->bhqk", then element-wise over k on each rank
//   O = P V                          "bhqk,bhkd->bhqd"
//   Y = O Wo                         "bhqd,hdm->bqm"   Wo[h, d, m]
// and backward from dY = Y - T (the loss 0.5 |Y - T|^2) to dX, dWq, dWk, dWv and dWo.
//
// What is split where is the caller's choice of four shardings (Act for X, Y and dX, Proj for
// Wq, Wk, Wv, Out for Wo, and DxTerms for the three terms of dX); the communication follows
// from them at compile time. With heads over "tp" and batch over "dp" (examples/attention.cpp):
// the products per head are local, Y's sum over heads is one AllReduce over tp, each weight
// gradient one AllReduce over dp, and dX's three terms are kept Partial over tp, added, and
// reduced once.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

#include <shardwise/tensor.hpp>

namespace attention {

namespace sw = shardwise;
template <int N>
using Tensor = Eigen::Tensor<double, N, Eigen::RowMajor>;
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<RowMatrix>;
using ConstMap = Eigen::Map<const RowMatrix>;

/// The problem: batch, sequence, model width, heads and the width of a head.
struct Sizes {
  Eigen::Index batch, seq, model, heads, head_dim;
  [[nodiscard]] sw::IndexExtents extents() const {
    return {{'b', batch}, {'q', seq}, {'k', seq}, {'m', model}, {'h', heads}, {'d', head_dim}};
  }
};

template <int N>
Tensor<N> uniform(const std::array<Eigen::Index, N>& dims, std::uint64_t seed, double scale) {
  Tensor<N> t(dims);
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(-scale, scale);
  for (Eigen::Index i = 0; i < t.size(); ++i) t.data()[i] = u(engine);
  return t;
}

/// The whole input, target and weights, the same on every rank.
struct Inputs {
  explicit Inputs(const Sizes& n)
      : x(uniform<3>({n.batch, n.seq, n.model}, 1, 1.0)), target(uniform<3>({n.batch, n.seq, n.model}, 2, 1.0)),
        wq(uniform<3>({n.model, n.heads, n.head_dim}, 3, 0.3)), wk(uniform<3>({n.model, n.heads, n.head_dim}, 4, 0.3)),
        wv(uniform<3>({n.model, n.heads, n.head_dim}, 5, 0.3)), wo(uniform<3>({n.heads, n.head_dim, n.model}, 6, 0.3)) {}
  Tensor<3> x, target, wq, wk, wv, wo;
};

/// The rows of length `cols` of a row-major block, as a matrix: a rank's block of S holds whole
/// rows (k is never split), so softmax and its gradient are row-wise there.
template <typename T>
Map rows_of(T& t, Eigen::Index cols) {
  return {t.data(), t.size() / cols, cols};
}

/// The operations of a pass, sw::einsum and sw::reduce as they are; the example's ledger adds
/// each plan's modeled traffic on the way.
struct Plain {
  template <sw::fixed_string Spec, typename ShC = sw::NaturalOutput, typename A, typename B>
  auto einsum(const A& a, const B& b) {
    return sw::einsum<Spec, ShC>(a, b);
  }
  template <typename T>
  auto reduce(const T& t) {
    return sw::reduce(t);
  }
};

/// The shardings of a pass (see the top of this file).
template <typename M, typename ShAct, typename ShProj, typename ShOut, typename ShDxTerms>
struct Layout {
  using mesh = M;
  using act = ShAct;
  using proj = ShProj;
  using out = ShOut;
  using dx_terms = ShDxTerms;
};

/// The pass's results, still sharded.
template <typename Y, typename Dx, typename Dw, typename Dwo>
struct Gradients {
  Y y;
  Dx dx;
  Dw dwq, dwk, dwv;
  Dwo dwo;
};

/// One forward and backward pass (see the top of this file) with the operations `ops`.
template <typename L, typename Ops>
auto forward_backward(const sw::ProcessGroupMesh<typename L::mesh>& groups, const Inputs& in, const Sizes& n, Ops& ops) {
  using M = typename L::mesh;
  const double scale = 1.0 / std::sqrt(static_cast<double>(n.head_dim));
  const auto x = sw::ShardedTensor<double, M, typename L::act>::distribute(groups, in.x);
  const auto target = sw::ShardedTensor<double, M, typename L::act>::distribute(groups, in.target);
  const auto wq = sw::ShardedTensor<double, M, typename L::proj>::distribute(groups, in.wq);
  const auto wk = sw::ShardedTensor<double, M, typename L::proj>::distribute(groups, in.wk);
  const auto wv = sw::ShardedTensor<double, M, typename L::proj>::distribute(groups, in.wv);
  const auto wo = sw::ShardedTensor<double, M, typename L::out>::distribute(groups, in.wo);

  // Forward.
  const auto q = ops.template einsum<"bqm,mhd->bhqd">(x, wq);
  const auto k = ops.template einsum<"bkm,mhd->bhkd">(x, wk);
  const auto v = ops.template einsum<"bkm,mhd->bhkd">(x, wv);
  auto p = ops.template einsum<"bhqd,bhkd->bhqk">(q, k);
  {  // P = softmax(S / sqrt(d)) over k, in place
    Map s = rows_of(p.local(), n.seq);
    s = (scale * (s.colwise() - s.rowwise().maxCoeff())).array().exp().matrix();
    s = s.array().colwise() / s.rowwise().sum().array();
  }
  const auto o = ops.template einsum<"bhqk,bhkd->bhqd">(p, v);
  auto y = ops.template einsum<"bhqd,hdm->bqm">(o, wo);

  // Backward from dY = Y - T.
  auto dy = sw::ShardedTensor<double, M, typename L::act>(groups, y.extents());
  dy.local() = y.local() - target.local();
  const auto d_o = ops.template einsum<"bqm,hdm->bhqd">(dy, wo);
  auto dwo = ops.template einsum<"bhqd,bqm->hdm">(o, dy);
  auto ds = ops.template einsum<"bhqd,bhkd->bhqk">(d_o, v);  // dP, made dS in place
  auto dv = ops.template einsum<"bhqk,bhqd->bhkd">(p, d_o);
  {  // dS = P * (dP - rowsum(dP * P)) / sqrt(d)
    Map d = rows_of(ds.local(), n.seq);
    const Map pm = rows_of(p.local(), n.seq);
    const Eigen::VectorXd dot = (d.array() * pm.array()).rowwise().sum();
    d = scale * (pm.array() * (d.colwise() - dot).array()).matrix();
  }
  const auto dq = ops.template einsum<"bhqk,bhkd->bhqd">(ds, k);
  const auto dk = ops.template einsum<"bhqk,bhqd->bhkd">(ds, q);
  auto dwq = ops.template einsum<"bqm,bhqd->mhd">(x, dq);
  auto dwk = ops.template einsum<"bkm,bhkd->mhd">(x, dk);
  auto dwv = ops.template einsum<"bkm,bhkd->mhd">(x, dv);
  // dX: three terms summed over heads; with the heads split, each is kept Partial, the three
  // are added on every rank, and one reduction finishes the sum.
  using DxTerms = typename L::dx_terms;
  auto dx = ops.template einsum<"bhqd,mhd->bqm", DxTerms>(dq, wq);
  dx.local() += ops.template einsum<"bhkd,mhd->bkm", DxTerms>(dk, wk).local();
  dx.local() += ops.template einsum<"bhkd,mhd->bkm", DxTerms>(dv, wv).local();
  if constexpr (DxTerms::is_partial) {
    auto reduced = ops.reduce(dx);
    return Gradients<decltype(y), decltype(reduced), decltype(dwq), decltype(dwo)>{
        std::move(y), std::move(reduced), std::move(dwq), std::move(dwk), std::move(dwv), std::move(dwo)};
  } else {
    return Gradients<decltype(y), decltype(dx), decltype(dwq), decltype(dwo)>{
        std::move(y), std::move(dx), std::move(dwq), std::move(dwk), std::move(dwv), std::move(dwo)};
  }
}

}  // namespace attention
