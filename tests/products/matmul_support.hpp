// Shared by the matmul tests: run one (mesh, shardings, shape, output, variant) case on
// one rank and report the error against serial Eigen and the bytes it sent.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "shardwise/shardwise.hpp"

namespace shardwise::testing {

/// The same pseudo-random matrix on every rank (entries in [-1, 1]).
template <typename Scalar>
Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> random_matrix(std::int64_t rows, std::int64_t cols,
                                                                     std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic> m(rows, cols);
  for (Eigen::Index j = 0; j < m.cols(); ++j)
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      if constexpr (detail::is_complex_v<Scalar>) {
        const double re = uniform(engine), im = uniform(engine);
        m(i, j) = Scalar(static_cast<typename Scalar::value_type>(re), static_cast<typename Scalar::value_type>(im));
      } else {
        m(i, j) = static_cast<Scalar>(uniform(engine));
      }
    }
  return m;
}

/// The scalar a reference is computed in: double, or std::complex<double> for complex ones.
template <typename Scalar>
using wide_t = std::conditional_t<detail::is_complex_v<Scalar>, std::complex<double>, double>;

/// ||got - want||_F / ||want||_F, computed in double precision (0 when both are empty or zero).
template <typename A, typename B>
double relative_error(const A& got, const B& want) {
  using W = wide_t<typename A::Scalar>;
  const double scale = want.template cast<W>().norm();
  const double diff = (got.template cast<W>() - want.template cast<W>()).norm();
  return scale == 0.0 ? diff : diff / scale;
}

/// The relative error allowed against serial Eigen: 1e-12 in double precision, 1e-4 in single.
template <typename Scalar>
constexpr double tolerance() {
  return std::is_same_v<Scalar, double> || std::is_same_v<Scalar, std::complex<double>> ? 1e-12 : 1e-4;
}

/// A scalar of type Scalar from a real and an imaginary part (the latter dropped for real types).
template <typename Scalar>
Scalar scalar_of(double re, double im) {
  if constexpr (detail::is_complex_v<Scalar>)
    return Scalar(static_cast<typename Scalar::value_type>(re), static_cast<typename Scalar::value_type>(im));
  else
    return static_cast<Scalar>(re);
}

/// What one rank saw in one case.
struct CaseResult {
  double error = 0;             ///< relative error of the gathered C against serial Eigen
  double gemm_error = 0;        ///< the same for gemm(alpha, A, B, beta, C) on the same plan
  Traffic gemm_measured;        ///< counted during that gemm (the plan's traffic: modeled below)
  double op_error = 0;          ///< the same for gemm(alpha, adjoint(Aᴴ), transposed(Bᵀ), beta, C)
  Traffic op_measured;          ///< counted during that gemm (the same plan's traffic)
  double tolerance = 0;         ///< what the error may be for this scalar type
  bool local_shape_ok = false;  ///< this rank's block has the size the output sharding says
  Traffic measured;             ///< counted by the CountingCommunicator during the matmul
  Traffic modeled;              ///< the plan's cost model for this rank
  std::string description;      ///< Plan::describe()
};

/// Runs C = A * B for the plan given by the template arguments on this rank.
/// `counters` are those of the CountingCommunicator under `groups` (may be null).
template <typename Scalar, typename ShA, typename ShB, typename ShC = NaturalOutput,
          typename Variant = variant::Standard, MeshType M>
CaseResult run_case(ProcessGroupMesh<M>& groups, MatmulShape shape, std::uint64_t seed,
                    const CommCounters* counters = nullptr) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  const auto a_global = random_matrix<Scalar>(shape.m, shape.k, seed);
  const auto b_global = random_matrix<Scalar>(shape.k, shape.n, seed + 1);
  const auto a = ShardedMatrix<Scalar, M, ShA>::distribute(groups, a_global);
  const auto b = ShardedMatrix<Scalar, M, ShB>::distribute(groups, b_global);

  CaseResult result;
  result.description = Plan::describe();
  result.tolerance = tolerance<Scalar>();
  const Traffic before = counters ? counters->total() : Traffic{};
  auto c = matmul<ShC>(a, b, Variant{});
  result.measured = counters ? counters->total() - before : Traffic{};
  result.modeled = Plan::traffic(groups.mesh(), groups.coordinate(), shape, sizeof(Scalar));

  using C = decltype(c);
  static_assert(std::is_same_v<typename C::sharding, typename Plan::output_sharding>);
  const detail::block_geometry geo{groups.mesh(), groups.coordinate()};
  constexpr auto out = detail::resolve_sharding<M, typename Plan::output_sharding>();
  result.local_shape_ok = c.local().rows() == geo.extent(shape.m, out.dims[0]) &&
                          c.local().cols() == geo.extent(shape.n, out.dims[1]);

  using W = wide_t<Scalar>;
  const auto reference = (a_global.template cast<W>() * b_global.template cast<W>()).eval();
  result.error = relative_error(c.to_global(), reference);

  // BLAS's contract on the same plan: C = alpha A B + beta C0 with C0 in the plan's output
  // sharding (a Partial C0 too: its value is the sum). Every other seed has beta = 0 and a C0
  // holding NaN, which must not be read.
  using CT = typename Plan::output_sharding;
  if constexpr (valid_matmul<M, ShA, ShB, CT, Variant>) {
    const bool zero_beta = seed % 2 == 0;
    const Scalar alpha = scalar_of<Scalar>(0.75, -0.5);
    const Scalar beta = zero_beta ? Scalar(0) : scalar_of<Scalar>(-1.25, 0.25);
    const auto c0_global = random_matrix<Scalar>(shape.m, shape.n, seed + 2);
    auto c0 = ShardedMatrix<Scalar, M, CT>::distribute(groups, c0_global);
    if (zero_beta) c0.local().setConstant(scalar_of<Scalar>(std::nan(""), 0.0));
    const Traffic gemm_before = counters ? counters->total() : Traffic{};
    gemm(alpha, a, b, beta, c0, Variant{});
    result.gemm_measured = counters ? counters->total() - gemm_before : Traffic{};
    const auto gemm_reference =
        (W(alpha) * reference + (zero_beta ? W(0) : W(beta)) * c0_global.template cast<W>()).eval();
    result.gemm_error = relative_error(c0.to_global(), gemm_reference);

    // BLAS's op 'C' and 'T': Aᴴ and Bᵀ distributed with the transposed shardings, then
    // adjoint(Aᴴ) (complex: a conjugated copy of each block; real: a transposed view) and
    // transposed(Bᵀ) (a view) have A's and B's shardings, so the plan is the same.
    {
      using Dense = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
      const Dense ah_global = a_global.adjoint(), bt_global = b_global.transpose();
      const auto ah =
          ShardedMatrix<Scalar, M, typename detail::transposed_sharding<ShA>::type>::distribute(groups, ah_global);
      const auto bt =
          ShardedMatrix<Scalar, M, typename detail::transposed_sharding<ShB>::type>::distribute(groups, bt_global);
      auto c1 = ShardedMatrix<Scalar, M, CT>::distribute(groups, c0_global);
      if (zero_beta) c1.local().setConstant(scalar_of<Scalar>(std::nan(""), 0.0));
      const Traffic op_before = counters ? counters->total() : Traffic{};
      gemm(alpha, adjoint(ah), transposed(bt), beta, c1, Variant{});
      result.op_measured = counters ? counters->total() - op_before : result.modeled;  // the model when not counted
      result.op_error = relative_error(c1.to_global(), gemm_reference);
    }
  } else {
    result.gemm_measured = result.modeled;
    result.op_measured = result.modeled;
  }
  return result;
}

}  // namespace shardwise::testing
