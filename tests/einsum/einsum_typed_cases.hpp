// The typed einsum cases (sw::einsum on ShardedTensor, plans from types) that both the
// virtual-cluster and the mpiexec tests run: attention's contractions with heads over tp and
// batch over dp, batched and rank-2 products, outer and inner products, requested, Partial and
// ReduceScatter outputs, and the ring and SUMMA variants, in double and complex scalars. Each is
// checked against the serial reference and its counted traffic against the plan's model, on
// owning operands and on transposed or permuted views of operands stored the other way round.
#pragma once

#include <complex>
#include <functional>
#include <string>
#include <vector>

#include "einsum_random.hpp"
#include "shardwise/tensor.hpp"

namespace shardwise::testing {

using DpTp = Mesh<Axis<"dp", dynamic_extent>, Axis<"tp", dynamic_extent>>;

/// What one rank saw of a typed case: the owning run (EinsumOutcome), and the same product on
/// views of operands stored with their dimensions reversed (permuted<...> or transposed).
struct TypedEinsumOutcome : EinsumOutcome {
  double permuted_error = 0;
  Traffic permuted_measured;
};

/// One typed case, type-erased: runs on a group mesh and returns this rank's outcome.
struct TypedEinsumCase {
  std::string name;
  std::function<TypedEinsumOutcome(ProcessGroupMesh<DpTp>&, const CommCounters&, std::uint64_t)> run;
};

/// The global tensor of `extents` (row-major) with the data random_tensor gives.
template <int Rank, typename Scalar = double>
Eigen::Tensor<Scalar, Rank, Eigen::RowMajor> global_tensor(const detail::tensor_extents& extents, std::uint64_t seed) {
  std::array<Eigen::Index, Rank> dims{};
  for (std::size_t d = 0; d < Rank; ++d) dims[d] = static_cast<Eigen::Index>(extents[d]);
  Eigen::Tensor<Scalar, Rank, Eigen::RowMajor> t(dims);
  const auto data = random_tensor<Scalar>(extents, Rank, seed);
  std::copy(data.begin(), data.end(), t.data());
  return t;
}

/// An operand stored with its dimensions reversed (owning, distributed with the reversed
/// sharding), so that permuted<R-1, ..., 0> of it (transposed, for a matrix) is a view with the
/// operand's own extents and sharding: the same product, read through strides.
template <typename Scalar, typename Sh, MeshType M, int Rank, std::size_t... I>
auto reversed_operand(ProcessGroupMesh<M>& groups, const Eigen::Tensor<Scalar, Rank, Eigen::RowMajor>& global,
                      std::index_sequence<I...>) {
  using Reversed = typename detail::permuted_sharding<Sh, (sizeof...(I) - 1 - I)...>::type;
  const Eigen::Tensor<Scalar, Rank, Eigen::RowMajor> stored =
      global.shuffle(std::array<int, sizeof...(I)>{static_cast<int>(sizeof...(I) - 1 - I)...});
  return ShardedTensor<Scalar, M, Reversed>::distribute(groups, stored);
}
template <std::size_t... I, typename X>
auto reversed_view(const X& x, std::index_sequence<I...>) {
  if constexpr (sizeof...(I) == 2) return transposed(x);
  else return permuted<(sizeof...(I) - 1 - I)...>(x);
}

/// Runs einsum<Spec, ShC>(A, B, V) in Scalar for index extents `e` on this rank: error against
/// the serial reference, and counted traffic (of the einsum call alone) against the plan's model;
/// then the same with A and B as permuted views (transposed ones for matrices) of arrays stored
/// the other way round, which must give the same result with the same traffic. The caller sets
/// CheckLevel::local, so that the counts are the schedule's alone.
template <fixed_string Spec, typename ShA, typename ShB, typename ShC = NaturalOutput, typename V = variant::Standard,
          typename Scalar = double, typename M>
TypedEinsumOutcome run_typed_einsum(ProcessGroupMesh<M>& groups, const CommCounters& counters, const IndexExtents& e,
                                    std::uint64_t seed) {
  using Plan = einsum_plan<Spec, M, ShA, ShB, ShC, V>;
  constexpr int rank_a = static_cast<int>(ShA::rank), rank_b = static_cast<int>(ShB::rank);
  EinsumCase reference;
  reference.spec = std::string(Spec.view());
  reference.ix = Plan::indices;
  reference.extents = e;
  const detail::operand_extents x = reference.operand_extents();
  const auto a_global = global_tensor<rank_a, Scalar>(x[0], seed);
  const auto b_global = global_tensor<rank_b, Scalar>(x[1], seed + 1);
  const auto a = ShardedTensor<Scalar, M, ShA>::distribute(groups, a_global);
  const auto b = ShardedTensor<Scalar, M, ShB>::distribute(groups, b_global);

  TypedEinsumOutcome outcome;
  if constexpr (std::is_same_v<Scalar, std::complex<float>>) outcome.tolerance = 1e-5;
  Traffic before = counters.total();
  const auto c = einsum<Spec, ShC>(a, b, V{});
  outcome.measured = counters.total() - before;
  outcome.modeled = Plan::traffic(groups.mesh(), groups.coordinate(), e, sizeof(Scalar));
  static_assert(std::is_same_v<typename decltype(c)::sharding, typename Plan::output_sharding>);

  const auto a_stored = reversed_operand<Scalar, ShA>(groups, a_global, std::make_index_sequence<rank_a>{});
  const auto b_stored = reversed_operand<Scalar, ShB>(groups, b_global, std::make_index_sequence<rank_b>{});
  const auto a_view = reversed_view(a_stored, std::make_index_sequence<rank_a>{});
  const auto b_view = reversed_view(b_stored, std::make_index_sequence<rank_b>{});
  static_assert(std::is_same_v<typename std::remove_const_t<decltype(a_view)>::sharding, ShA>);
  static_assert(std::is_same_v<typename std::remove_const_t<decltype(b_view)>::sharding, ShB>);
  before = counters.total();
  const auto c_view = einsum<Spec, ShC>(a_view, b_view, V{});
  outcome.permuted_measured = counters.total() - before;

  const std::vector<Scalar> a_data(a_global.data(), a_global.data() + a_global.size());
  const std::vector<Scalar> b_data(b_global.data(), b_global.data() + b_global.size());
  const auto want = serial_einsum(reference, a_data, b_data);
  auto error_of = [&](const auto& whole) {
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::abs(whole.data()[i] - want[i])));
      scale = std::max(scale, static_cast<double>(std::abs(want[i])));
    }
    return scale > 0 ? diff / scale : diff;
  };
  outcome.error = error_of(c.to_global());
  outcome.permuted_error = error_of(c_view.to_global());
  return outcome;
}

template <fixed_string Spec, typename ShA, typename ShB, typename ShC = NaturalOutput, typename V = variant::Standard,
          typename Scalar = double>
void add_typed_case(std::vector<TypedEinsumCase>& cases, IndexExtents e) {
  static_assert(valid_einsum<Spec, DpTp, ShA, ShB, ShC, V>, "a typed einsum case that does not plan");
  using Plan = einsum_plan<Spec, DpTp, ShA, ShB, ShC, V>;
  const char* scalar = std::is_same_v<Scalar, double> ? "" : std::is_same_v<Scalar, std::complex<double>> ? " complex<double>" : " complex<float>";
  cases.push_back({std::string(Spec.view()) + " " + std::string(V::name) + scalar + ": " + Plan::describe(),
                   [e](ProcessGroupMesh<DpTp>& g, const CommCounters& counters, std::uint64_t seed) {
                     return run_typed_einsum<Spec, ShA, ShB, ShC, V, Scalar>(g, counters, e, seed);
                   }});
}

/// The pool (defined in einsum_typed_cases.cpp, compiled once for both test programs).
std::vector<TypedEinsumCase> typed_einsum_cases();

}  // namespace shardwise::testing
