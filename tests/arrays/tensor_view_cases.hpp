// Shared by the view tests: einsum on views of each rank's own N-D buffer (rows padded) and on
// permuted views, against the owning einsum: the same result, traffic == the cost model, and
// for a plan that gathers neither input the workspace no larger than the owning run's.
#pragma once

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "products/matmul_cases.hpp"
#include "shardwise/tensor.hpp"
#include "view_cases.hpp"

namespace shardwise::testing {

/// The same pseudo-random row-major tensor on every rank.
template <int Rank>
Eigen::Tensor<double, Rank, Eigen::RowMajor> random_tensor(const std::array<std::int64_t, Rank>& extents,
                                                          std::uint64_t seed) {
  Eigen::array<Eigen::Index, Rank> dims{};
  for (int d = 0; d < Rank; ++d) dims[static_cast<std::size_t>(d)] = static_cast<Eigen::Index>(extents[static_cast<std::size_t>(d)]);
  Eigen::Tensor<double, Rank, Eigen::RowMajor> t(dims);
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (Eigen::Index i = 0; i < t.size(); ++i) t.data()[i] = uniform(engine);
  return t;
}

/// ||x - y|| / ||y|| over two tensors of the same extents.
template <typename X, typename Y>
double tensor_error(const X& x, const Y& y) {
  const Eigen::Map<const Eigen::VectorXd> a(x.data(), x.size()), b(y.data(), y.size());
  if (x.size() != y.size()) return 1e300;
  return b.norm() == 0 ? (a - b).norm() : (a - b).norm() / b.norm();
}

/// This rank's block of an owning tensor copied into a row-major buffer whose innermost rows
/// are padded to `ld` (a caller's own layout); its strides.
template <typename T>
std::pair<std::vector<double>, typename T::extents_type> padded_copy(const T& owning, std::int64_t pad) {
  constexpr std::size_t rank = T::rank;
  const auto local = owning.local_extents();
  typename T::extents_type strides{};
  std::int64_t stride = 1;
  for (std::size_t d = rank; d-- > 0;) {
    strides[d] = stride;
    stride *= local[d] + (d + 1 == rank ? pad : 0);
  }
  std::vector<double> buffer(static_cast<std::size_t>(std::max<std::int64_t>(stride, 1)), 1e30);
  const double* from = owning.local().data();
  const std::int64_t count = owning.local().size();
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t rest = i, at = 0;
    for (std::size_t d = rank; d-- > 0;) {
      at += (rest % local[d]) * strides[d];
      rest /= local[d];
    }
    buffer[static_cast<std::size_t>(at)] = from[i];
  }
  return {std::move(buffer), strides};
}

template <typename Plan>
constexpr bool einsum_gathers_an_input() {
  for (const Step& s : Plan::schedule)
    if ((s.kind == StepKind::all_gather || s.kind == StepKind::ring_all_gather_gemm) && s.operand != Operand::C)
      return true;
  return false;
}

/// "bsm,mh->bsh": X and W as padded views, then X as a permuted view of an owning [b, m, s]
/// tensor and W as a permuted (transposed) view of an owning [h, m] one.
template <typename ShX, typename ShW, MeshType M>
ViewResult run_tensor_view_case(ProcessGroupMesh<M>& groups, std::array<std::int64_t, 4> bsmh, std::uint64_t seed,
                                const CommCounters* counters) {
  using Plan = einsum_plan<"bsm,mh->bsh", M, ShX, ShW>;
  using XT = ShardedTensor<double, M, ShX>;
  using WT = ShardedTensor<double, M, ShW>;
  const auto [b, s, m, h] = bsmh;
  const auto x_global = random_tensor<3>({b, s, m}, seed);
  const auto w_global = random_tensor<2>({m, h}, seed + 1);
  ViewResult r;
  r.tolerance = 1e-12;
  std::ostringstream why;
  auto traffic_now = [&] { return counters ? counters->total() : Traffic{}; };
  const IndexExtents letters{{'b', b}, {'s', s}, {'m', m}, {'h', h}};
  const Traffic model = Plan::traffic(groups.mesh(), groups.coordinate(), letters, sizeof(double));

  const auto x_own = XT::distribute(groups, x_global);
  const auto w_own = WT::distribute(groups, w_global);
  detail::Workspace::local().release();
  Traffic before = traffic_now();
  const auto c_own = einsum<"bsm,mh->bsh">(x_own, w_own);
  const Traffic own_traffic = traffic_now() - before;
  const std::size_t own_bytes = detail::Workspace::local().bytes_held();

  auto [x_buffer, x_strides] = padded_copy(x_own, 3);
  auto [w_buffer, w_strides] = padded_copy(w_own, 2);
  const auto x_view = view<XT>(groups, {b, s, m}, x_buffer.data(), x_strides, x_own.local_extents());
  const auto w_view = view<WT>(groups, {m, h}, static_cast<const double*>(w_buffer.data()), w_strides,
                                    w_own.local_extents());
  r.in_place = x_view.data() == x_buffer.data() && w_view.data() == w_buffer.data();
  detail::Workspace::local().release();
  before = traffic_now();
  const auto c_view = einsum<"bsm,mh->bsh">(x_view, w_view);
  const Traffic view_traffic = traffic_now() - before;
  const std::size_t view_bytes = detail::Workspace::local().bytes_held();
  // A 3-D block padded in its innermost rows is not one matrix of (b s) rows: the GEMM packs
  // it, unless b or s is 1 here (then it is). So only W's reading in place is asserted through
  // the workspace, with X unpadded below.
  (void)view_bytes;

  // X as a permuted view of an owning [b, m, s] tensor (its planner-named pack into [b, s, m]);
  // W as a transposed view of an owning [h, m]: column-major, which the GEMM reads in place.
  using ShXp = typename detail::permuted_sharding<ShX, 0, 2, 1>::type;
  using ShWt = typename detail::permuted_sharding<ShW, 1, 0>::type;
  Eigen::Tensor<double, 3, Eigen::RowMajor> xp_global = x_global.shuffle(Eigen::array<int, 3>{0, 2, 1});
  Eigen::Tensor<double, 2, Eigen::RowMajor> wt_global = w_global.shuffle(Eigen::array<int, 2>{1, 0});
  const auto xp_own = ShardedTensor<double, M, ShXp>::distribute(groups, xp_global);
  const auto wt_own = ShardedTensor<double, M, ShWt>::distribute(groups, wt_global);
  const auto x_p = permuted<0, 2, 1>(xp_own);
  const auto w_t = permuted<1, 0>(wt_own);
  static_assert(std::is_same_v<typename std::remove_const_t<decltype(x_p)>::sharding, ShX>);
  static_assert(std::is_same_v<typename std::remove_const_t<decltype(w_t)>::sharding, ShW>);
  r.in_place = r.in_place && x_p.data() == xp_own.local().data() && w_t.data() == wt_own.local().data();

  // W transposed alone: read in place, so the workspace is the owning run's.
  detail::Workspace::local().release();
  before = traffic_now();
  const auto c_wt = einsum<"bsm,mh->bsh">(x_own, w_t);
  const Traffic wt_traffic = traffic_now() - before;
  const std::size_t wt_bytes = detail::Workspace::local().bytes_held();
  r.no_copy = einsum_gathers_an_input<Plan>() || wt_bytes == own_bytes;
  if (!r.no_copy) why << " workspace: transposed W " << wt_bytes << " B, owning " << own_bytes << " B;";

  before = traffic_now();
  const auto c_p = einsum<"bsm,mh->bsh">(x_p, w_t);
  const Traffic p_traffic = traffic_now() - before;

  r.traffic_ok = !counters || (own_traffic == model && view_traffic == model && wt_traffic == model &&
                               p_traffic == model);
  if (!r.traffic_ok)
    why << " traffic (bytes): model " << model.bytes << ", owning " << own_traffic.bytes << ", views "
        << view_traffic.bytes << ", transposed W " << wt_traffic.bytes << ", permuted " << p_traffic.bytes << ";";
  const auto want = c_own.to_global();
  r.error = std::max(tensor_error(c_view.to_global(), want), tensor_error(c_wt.to_global(), want));
  r.transposed_error = tensor_error(c_p.to_global(), want);
  r.to_global_ok = tensor_error(x_view.to_global(), x_global) == 0.0 && tensor_error(x_p.to_global(), x_global) == 0.0 &&
                   tensor_error(w_t.to_global(), w_global) == 0.0;
  r.detail = why.str();
  return r;
}

template <typename M>
struct TensorViewCase {
  std::string name;
  std::function<ViewResult(ProcessGroupMesh<M>&, std::array<std::int64_t, 4>, std::uint64_t, const CommCounters*)> run;
};

template <typename M, typename ShX, typename ShW>
void add_tensor_view_case(std::vector<TensorViewCase<M>>& cases) {
  cases.push_back({"X" + ShX::to_string() + " W" + ShW::to_string() + ": " +
                       einsum_plan<"bsm,mh->bsh", M, ShX, ShW>::describe(),
                   [](ProcessGroupMesh<M>& g, std::array<std::int64_t, 4> e, std::uint64_t seed, const CommCounters* c) {
                     return run_tensor_view_case<ShX, ShW>(g, e, seed, c);
                   }});
}

/// Local, matched contraction, gathered contraction, split free index of W, split free b or s of X.
inline std::vector<TensorViewCase<Line>> line_tensor_view_cases() {
  std::vector<TensorViewCase<Line>> cases;
  using X = S<"x">;
  add_tensor_view_case<Line, TS<R, R, R>, TS<R, R>>(cases);
  add_tensor_view_case<Line, TS<R, R, X>, TS<X, R>>(cases);
  add_tensor_view_case<Line, TS<R, R, X>, TS<R, R>>(cases);
  add_tensor_view_case<Line, TS<R, R, R>, TS<R, X>>(cases);
  add_tensor_view_case<Line, TS<X, R, R>, TS<R, R>>(cases);
  add_tensor_view_case<Line, TS<R, X, R>, TS<R, R>>(cases);
  return cases;
}

}  // namespace shardwise::testing
