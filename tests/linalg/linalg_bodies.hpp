// The vector operations' checks (shardwise/linalg.hpp: dot, norm, axpy, scale, matvec; einsum's
// 0-D output; generate; elementwise) and a Partial kept where B is replicated, as bodies that run
// on one rank of any mesh with axes x and y: test_linalg_virtual.cpp runs them on a 2 x 2 virtual
// cluster, test_slice_mpi.cpp under mpiexec on 2, 3 and 4 ranks.
//
// body(groups, counters, fail): fail(what) records this rank's failure and the body goes on, so
// every rank takes part in every collective whatever it found. Counted bytes are compared with the
// plans' model, so the caller runs the body at CheckLevel::local (LocalChecks).
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>

#include "shardwise/comm/counting.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/shardwise.hpp"
#include "shardwise/tensor.hpp"

namespace shardwise::testing::linalg {

using R = Replicated;
template <fixed_string... N> using S = Split<N...>;
template <fixed_string... N> using P = Partial<N...>;
template <typename... D> using TS = TensorSharding<D...>;
using Scalar0 = TS<>;

template <typename Scalar>
Eigen::Tensor<Scalar, 1, Eigen::RowMajor> vector_of(Eigen::Index n, double phase) {
  Eigen::Tensor<Scalar, 1, Eigen::RowMajor> v(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double t = phase + 0.37 * static_cast<double>(i);
    if constexpr (detail::is_complex_v<Scalar>) v(i) = Scalar(std::sin(t), std::cos(2 * t));
    else v(i) = std::sin(t);
  }
  return v;
}

/// einsum "i,i->": a replicated 0-D result, its AllReduce counted == modeled; 0-D distribute.
template <MeshType M, typename Fail>
void einsum_scalar_output(ProcessGroupMesh<M>& groups, const CommCounters& counters, Fail fail) {
  using Split2 = TS<S<"x", "y">>;
  const auto xg = vector_of<double>(11, 0.3), yg = vector_of<double>(11, 1.1);
  double want = 0;
  for (Eigen::Index i = 0; i < 11; ++i) want += xg(i) * yg(i);
  const auto x = ShardedTensor<double, M, Split2>::distribute(groups, xg);
  const auto y = ShardedTensor<double, M, Split2>::distribute(groups, yg);
  const Traffic before = counters.total();
  const auto s = einsum<"i,i->">(x, y);
  const Traffic sent = counters.total() - before;
  static_assert(std::is_same_v<typename std::remove_const_t<decltype(s)>::sharding, Scalar0>);
  if (std::abs(s.local()() - want) > 1e-14) fail("einsum i,i-> differs from the serial dot");
  if (sent != einsum_plan<"i,i->", M, Split2, Split2>::traffic(groups.mesh(), groups.coordinate(), {{'i', 11}}, 8))
    fail("einsum i,i->: counted != modeled");
  if (std::abs(s.to_global()() - want) > 1e-14) fail("to_global() of a 0-D tensor");
  Eigen::Tensor<double, 0, Eigen::RowMajor> one;
  one() = 2.5;
  if (ShardedTensor<double, M, Scalar0>::distribute(groups, one).to_global()() != 2.5) fail("0-D distribute");
}

/// dot (split with split, split with replicated), norm, axpy, scale and matvec (natural output,
/// and a requested split the pending sum is reduce-scattered into), uneven extents.
template <MeshType M, typename Fail>
void dot_norm_axpy_scale_matvec(ProcessGroupMesh<M>& groups, const CommCounters& counters, Fail fail) {
  constexpr Eigen::Index n = 13;  // uneven over 2, 3 and 4
  const auto xg = vector_of<double>(n, 0.2), yg = vector_of<double>(n, 0.9);
  Eigen::Tensor<double, 2, Eigen::RowMajor> ag(n, n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < n; ++j) ag(i, j) = 1.0 / (1.0 + static_cast<double>(i + 2 * j));
  double dot_want = 0, norm_want = 0;
  for (Eigen::Index i = 0; i < n; ++i) dot_want += xg(i) * yg(i), norm_want += xg(i) * xg(i);
  norm_want = std::sqrt(norm_want);
  const M& mesh = groups.mesh();
  const auto at = groups.coordinate();

  using V = TS<S<"x">>;
  const auto x = ShardedTensor<double, M, V>::distribute(groups, xg);
  const auto x_whole = ShardedTensor<double, M, TS<R>>::distribute(groups, xg);
  auto y = ShardedTensor<double, M, V>::distribute(groups, yg);

  Traffic before = counters.total();
  if (std::abs(dot(x, y) - dot_want) > 1e-14) fail("dot");
  if (counters.total() - before != dot_plan<M, V, V>::traffic(mesh, at, {{'i', n}}, 8)) fail("dot bytes");
  before = counters.total();
  if (std::abs(dot(x, x_whole) - norm_want * norm_want) > 1e-13) fail("dot of a split and a replicated vector");
  if (counters.total() - before != dot_plan<M, V, TS<R>>::traffic(mesh, at, {{'i', n}}, 8))
    fail("dot bytes, split and replicated");
  before = counters.total();
  if (std::abs(norm(x) - norm_want) > 1e-14) fail("norm");
  if (counters.total() - before != norm_plan<M, V>::traffic(mesh, at, {{'i', n}}, 8)) fail("norm bytes");
  before = counters.total();
  if (std::abs(norm(x_whole) - norm_want) > 1e-14) fail("norm of a replicated vector");
  if (counters.total() != before) fail("the norm of a replicated vector sends nothing");

  before = counters.total();
  axpy(-2.0, x, y);  // y = y - 2 x
  scale(0.5, y);     // y = y / 2 - x
  if (counters.total() != before) fail("axpy and scale sent bytes");
  const auto yl = y.to_global();
  for (Eigen::Index i = 0; i < n; ++i)
    if (std::abs(yl(i) - (yg(i) / 2 - xg(i))) > 1e-15) {
      fail("axpy and scale");
      break;
    }

  const auto a = ShardedTensor<double, M, TS<S<"x">, S<"y">>>::distribute(groups, ag);
  before = counters.total();
  const auto ax = matvec(a, x_whole);  // x sliced to [y], AllReduce over y
  if (counters.total() - before != matvec_plan<M, TS<S<"x">, S<"y">>, TS<R>>::traffic(mesh, at, {{'i', n}, {'j', n}}, 8))
    fail("matvec bytes");
  const auto axl = ax.to_global();
  // A by columns over (x,y) and x split like them, the result requested split like x too: the
  // pending sum is reduce-scattered into it, and nothing else moves.
  using ByRanks = TS<S<"x", "y">>;
  const auto a_columns = ShardedTensor<double, M, TS<R, S<"x", "y">>>::distribute(groups, ag);
  const auto x_split = ShardedTensor<double, M, ByRanks>::distribute(groups, xg);
  before = counters.total();
  const ShardedTensor<double, M, ByRanks> ax_split = matvec<ByRanks>(a_columns, x_split);
  using Requested = matvec_plan<M, TS<R, S<"x", "y">>, ByRanks, ByRanks>;
  static_assert(Requested::schedule.back().kind == StepKind::reduce_scatter);
  if (counters.total() - before != Requested::traffic(mesh, at, {{'i', n}, {'j', n}}, 8))
    fail("matvec bytes, requested output");
  const auto axl_split = ax_split.to_global();
  for (Eigen::Index i = 0; i < n; ++i) {
    double want = 0;
    for (Eigen::Index j = 0; j < n; ++j) want += ag(i, j) * xg(j);
    if (std::abs(axl(i) - want) > 1e-14) fail("matvec");
    if (std::abs(axl_split(i) - want) > 1e-14) fail("matvec, requested output");
  }
}

/// A Partial kept where B is replicated: A splits k over Axes, B is on every rank, C is requested
/// with the pending sum over Axes. B is sliced to A's split (a local step), the local GEMM runs,
/// and nothing is sent: 0 bytes counted and modeled; reduce() then gives A B (its AllReduce
/// counted == modeled). As matmul on matrices and as matvec (einsum "ij,j->i") on tensors.
template <MeshType M, fixed_string... Axes, typename Fail>
void keep_partial_with_b_replicated(ProcessGroupMesh<M>& groups, const CommCounters& counters, Fail fail) {
  using ShA = TS<R, S<Axes...>>;
  using Rep = TS<R, R>;
  using Pending = TS<R, R, P<Axes...>>;
  using Plan = matmul_plan<M, ShA, Rep, Pending>;
  static_assert(std::is_same_v<typename Plan::output_sharding, Pending>);
  static_assert(Plan::schedule.size() == 2 && Plan::schedule[0].kind == StepKind::slice &&
                    Plan::schedule[0].operand == Operand::B && Plan::schedule[1].kind == StepKind::local_gemm,
                "slice B along k, then the local GEMM, and no collective");
  constexpr MatmulShape shape{.m = 7, .k = 11, .n = 3};  // k uneven over 2, 3 and 4
  Eigen::MatrixXd a(shape.m, shape.k), b(shape.k, shape.n);
  for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = std::sin(0.5 + static_cast<double>(i));
  for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = std::cos(1.5 + static_cast<double>(i));
  const Eigen::MatrixXd want = a * b;
  const M& mesh = groups.mesh();
  const auto at = groups.coordinate();

  const auto sa = ShardedMatrix<double, M, ShA>::distribute(groups, a);
  const auto sb = ShardedMatrix<double, M, Rep>::distribute(groups, b);
  Traffic before = counters.total();
  const auto pending = matmul<Pending>(sa, sb);
  if (counters.total() != before) fail("matmul to a Partial with B replicated sent bytes");
  if (Plan::traffic(mesh, at, shape, 8) != Traffic{}) fail("the model of matmul to a Partial is not 0 bytes");
  before = counters.total();
  const auto reduced = reduce(pending);
  static_assert(std::is_same_v<typename std::remove_const_t<decltype(reduced)>::sharding, Rep>);
  if (counters.total() - before != reshard_plan<M, Pending, Rep>::traffic(mesh, at, {shape.m, shape.n}, 8))
    fail("reduce of the Partial: counted != modeled");
  if ((reduced.to_global() - want).cwiseAbs().maxCoeff() > 1e-13) fail("reduce(matmul to a Partial) differs from A B");

  // The same as a contraction of tensors: matvec (einsum "ij,j->i") with the output requested Partial.
  using PendingVector = TS<R, P<Axes...>>;
  using VectorPlan = matvec_plan<M, ShA, TS<R>, PendingVector>;
  static_assert(VectorPlan::schedule.size() == 2 && VectorPlan::schedule[0].kind == StepKind::slice &&
                VectorPlan::schedule[1].kind == StepKind::local_gemm);
  Eigen::Tensor<double, 2, Eigen::RowMajor> ag(shape.m, shape.k);
  for (Eigen::Index i = 0; i < shape.m; ++i)
    for (Eigen::Index j = 0; j < shape.k; ++j) ag(i, j) = a(i, j);
  const auto vg = vector_of<double>(shape.k, 0.7);
  const auto ta = ShardedTensor<double, M, ShA>::distribute(groups, ag);
  const auto tv = ShardedTensor<double, M, TS<R>>::distribute(groups, vg);
  before = counters.total();
  const auto pending_vector = matvec<PendingVector>(ta, tv);
  if (counters.total() != before) fail("matvec to a Partial with x replicated sent bytes");
  if (VectorPlan::traffic(mesh, at, {{'i', shape.m}, {'j', shape.k}}, 8) != Traffic{})
    fail("the model of matvec to a Partial is not 0 bytes");
  before = counters.total();
  const auto av = reduce(pending_vector);
  if (counters.total() - before != reshard_plan<M, PendingVector, TS<R>>::traffic(mesh, at, {shape.m}, 8))
    fail("reduce of the Partial vector: counted != modeled");
  const auto avl = av.to_global();
  for (Eigen::Index i = 0; i < shape.m; ++i) {
    double w = 0;
    for (Eigen::Index j = 0; j < shape.k; ++j) w += ag(i, j) * vg(j);
    if (std::abs(avl(i) - w) > 1e-13) {
      fail("reduce(matvec to a Partial) differs from A x");
      break;
    }
  }
}

/// generate: each rank fills its own block from global indices (2-D, Partial, complex, 0-D), 0 bytes.
template <MeshType M, typename Fail>
void generate_blocks(ProcessGroupMesh<M>& groups, const CommCounters& counters, Fail fail) {
  constexpr std::int64_t rows = 7, cols = 5;  // uneven over 2
  const auto entry = [](std::int64_t i, std::int64_t j) { return static_cast<double>(100 * i + j); };
  const Traffic before = counters.total();
  const auto a = ShardedTensor<double, M, TS<S<"y">, S<"x">>>::generate(groups, {rows, cols}, entry);
  const auto p = ShardedTensor<double, M, TS<S<"x">, R, P<"y">>>::generate(groups, {rows, cols}, entry);
  const auto v = ShardedTensor<std::complex<double>, M, TS<S<"x", "y">>>::generate(
      groups, {rows}, [](std::int64_t i) { return std::complex<double>(static_cast<double>(i), -1.0); });
  const auto s = ShardedTensor<double, M, Scalar0>::generate(groups, {}, [] { return 2.5; });
  if (counters.total() != before) fail("generate sent bytes");
  const auto al = a.to_global(), pl = reduce(p).to_global();
  const auto vl = v.to_global();
  for (std::int64_t i = 0; i < rows; ++i) {
    if (vl(i) != std::complex<double>(static_cast<double>(i), -1.0)) fail("generate, complex vector");
    for (std::int64_t j = 0; j < cols; ++j) {
      if (al(i, j) != entry(i, j)) fail("generate, 2-D blocks");
      if (pl(i, j) != entry(i, j)) fail("generate, Partial: one share holds the value");
    }
  }
  if (s.local()() != 2.5) fail("generate, 0-D");
}

/// elementwise and elementwise_into (mixed scalar types, in place), 0 bytes; other extents refused.
template <MeshType M, typename Fail>
void elementwise_on_blocks(ProcessGroupMesh<M>& groups, const CommCounters& counters, Fail fail) {
  using C = std::complex<double>;
  constexpr std::int64_t rows = 5, cols = 3;  // uneven over 2
  using Sh = TS<S<"y">, S<"x">>;
  const auto x = ShardedTensor<double, M, Sh>::generate(
      groups, {rows, cols}, [](std::int64_t i, std::int64_t j) { return static_cast<double>(i - 2 * j); });
  auto y = ShardedTensor<C, M, Sh>::generate(
      groups, {rows, cols}, [](std::int64_t i, std::int64_t j) { return C(static_cast<double>(j), 1.0 + i); });
  const Traffic before = counters.total();
  // Mixed scalar types; the result's is the function's (double from |y|).
  const auto z = elementwise([](double a, C b) { return a + std::abs(b); }, x, y);
  static_assert(std::is_same_v<std::remove_const_t<decltype(z)>, ShardedTensor<double, M, Sh>>);
  elementwise_into(y, [](C b, double a) { return b * a; }, y, x);  // in place
  if (counters.total() != before) fail("elementwise sent bytes");
  const auto zl = z.to_global();
  const auto yl = y.to_global();
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const double a = static_cast<double>(i - 2 * j);
      const C b(static_cast<double>(j), 1.0 + static_cast<double>(i));
      if (zl(i, j) != a + std::abs(b)) fail("elementwise");
      if (yl(i, j) != b * a) fail("elementwise_into, in place");
    }
  // Different extents: the same error on every rank.
  const auto w = ShardedTensor<double, M, Sh>::generate(groups, {rows, cols + 1}, [](std::int64_t, std::int64_t) { return 1.0; });
  try {
    (void)elementwise([](double a, double b) { return a + b; }, x, w);
    fail("elementwise of arrays of different extents was accepted");
  } catch (const std::exception& e) {
    if (std::string(e.what()).find("the arrays have different extents") == std::string::npos)
      fail(std::string("unexpected message: ") + e.what());
  }
}

/// Complex dot is dotc (the first argument conjugated); complex norm's bytes (a double scale).
template <MeshType M, typename Fail>
void complex_dot_and_norm(ProcessGroupMesh<M>& groups, const CommCounters& counters, Fail fail) {
  using C = std::complex<double>;
  const auto xg = vector_of<C>(9, 0.4), yg = vector_of<C>(9, 1.7);
  C want = 0;
  for (Eigen::Index i = 0; i < 9; ++i) want += std::conj(xg(i)) * yg(i);
  using V = TS<S<"y", "x">>;
  const auto x = ShardedTensor<C, M, V>::distribute(groups, xg);
  const auto y = ShardedTensor<C, M, V>::distribute(groups, yg);
  if (std::abs(dot(x, y) - want) > 1e-14) fail("complex dot (dotc)");
  const Traffic before = counters.total();
  const double n = norm(x);
  // The scale is one double; the dot of the scaled vector a complex<double>.
  if (counters.total() - before != norm_plan<M, V>::traffic(groups.mesh(), groups.coordinate(), {{'i', 9}}, 16, 8))
    fail("complex norm bytes");
  if (std::abs(n - std::sqrt(std::abs(dot(x, x)))) > 1e-14) fail("complex norm");
}

/// norm is scaled: no overflow for 1e300s, no underflow for 1e-300s.
template <MeshType M, typename Fail>
void norm_without_overflow(ProcessGroupMesh<M>& groups, const CommCounters&, Fail fail) {
  Eigen::Tensor<double, 1, Eigen::RowMajor> big(6);
  big.setConstant(1e300);  // squares overflow a double; the norm, sqrt(6) * 1e300, does not
  Eigen::Tensor<double, 1, Eigen::RowMajor> tiny(6);
  tiny.setConstant(1e-300);  // squares underflow to 0
  const auto x = ShardedTensor<double, M, TS<S<"x", "y">>>::distribute(groups, big);
  const auto t = ShardedTensor<double, M, TS<S<"x", "y">>>::distribute(groups, tiny);
  if (std::abs(norm(x) / (std::sqrt(6.0) * 1e300) - 1) > 1e-15) fail("norm of 1e300s");
  if (std::abs(norm(t) / (std::sqrt(6.0) * 1e-300) - 1) > 1e-15) fail("norm of 1e-300s");
}

}  // namespace shardwise::testing::linalg
