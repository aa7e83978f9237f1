// The typed einsum cases (sw::einsum on ShardedTensor, plans from types) that both the
// virtual-cluster and the mpiexec tests run: attention's contractions with heads over tp and
// batch over dp, batched and rank-2 products, outer and inner products, requested, Partial and
// ReduceScatter outputs, and the ring and SUMMA variants. Each is checked against the serial
// reference and its counted traffic against the plan's model.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "einsum_random.hpp"
#include "shardwise/tensor.hpp"

namespace shardwise::testing {

using DpTp = Mesh<Axis<"dp", dynamic_extent>, Axis<"tp", dynamic_extent>>;

/// One typed case, type-erased: runs on a group mesh and returns this rank's outcome.
struct TypedEinsumCase {
  std::string name;
  std::function<EinsumOutcome(ProcessGroupMesh<DpTp>&, const CommCounters&, std::uint64_t)> run;
};

/// The global tensor of `extents` (row-major) with the data random_tensor gives.
template <int Rank>
Eigen::Tensor<double, Rank, Eigen::RowMajor> global_tensor(const detail::tensor_extents& extents, std::uint64_t seed) {
  std::array<Eigen::Index, Rank> dims{};
  for (std::size_t d = 0; d < Rank; ++d) dims[d] = static_cast<Eigen::Index>(extents[d]);
  Eigen::Tensor<double, Rank, Eigen::RowMajor> t(dims);
  const auto data = random_tensor(extents, Rank, seed);
  std::copy(data.begin(), data.end(), t.data());
  return t;
}

/// Runs einsum<Spec, ShC>(A, B, V) for index extents `e` on this rank: error against the serial
/// reference, and counted traffic (of the einsum call alone) against the plan's model. The
/// caller sets CheckLevel::local, so that the counts are the schedule's alone.
template <fixed_string Spec, typename ShA, typename ShB, typename ShC = NaturalOutput, typename V = variant::Standard,
          typename M>
EinsumOutcome run_typed_einsum(ProcessGroupMesh<M>& groups, const CommCounters& counters, const IndexExtents& e,
                               std::uint64_t seed) {
  using Plan = einsum_plan<Spec, M, ShA, ShB, ShC, V>;
  EinsumCase reference;
  reference.spec = std::string(Spec.view());
  reference.ix = Plan::indices;
  reference.extents = e;
  const detail::operand_extents x = reference.operand_extents();
  const auto a_global = global_tensor<static_cast<int>(ShA::rank)>(x[0], seed);
  const auto b_global = global_tensor<static_cast<int>(ShB::rank)>(x[1], seed + 1);
  const auto a = ShardedTensor<double, M, ShA>::distribute(groups, a_global);
  const auto b = ShardedTensor<double, M, ShB>::distribute(groups, b_global);

  EinsumOutcome outcome;
  const Traffic before = counters.total();
  const auto c = einsum<Spec, ShC>(a, b, V{});
  outcome.measured = counters.total() - before;
  outcome.modeled = Plan::traffic(groups.mesh(), groups.coordinate(), e, sizeof(double));
  static_assert(std::is_same_v<typename decltype(c)::sharding, typename Plan::output_sharding>);

  const auto whole = c.to_global();
  const std::vector<double> a_data(a_global.data(), a_global.data() + a_global.size());
  const std::vector<double> b_data(b_global.data(), b_global.data() + b_global.size());
  const auto want = serial_einsum(reference, a_data, b_data);
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(whole.data()[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  outcome.error = scale > 0 ? diff / scale : diff;
  return outcome;
}

template <fixed_string Spec, typename ShA, typename ShB, typename ShC = NaturalOutput, typename V = variant::Standard>
void add_typed_case(std::vector<TypedEinsumCase>& cases, IndexExtents e) {
  static_assert(valid_einsum<Spec, DpTp, ShA, ShB, ShC, V>, "a typed einsum case that does not plan");
  using Plan = einsum_plan<Spec, DpTp, ShA, ShB, ShC, V>;
  cases.push_back({std::string(Spec.view()) + " " + std::string(V::name) + ": " + Plan::describe(),
                   [e](ProcessGroupMesh<DpTp>& g, const CommCounters& counters, std::uint64_t seed) {
                     return run_typed_einsum<Spec, ShA, ShB, ShC, V>(g, counters, e, seed);
                   }});
}

/// The pool (defined in einsum_typed_cases.cpp, compiled once for both test programs).
std::vector<TypedEinsumCase> typed_einsum_cases();

}  // namespace shardwise::testing
