// Runs one FeedForward case on one rank: distribute random X, dY and parameters, forward,
// backward (with dX), backward again without dX (it accumulates), and compare everything with
// serial double Eigen; count the traffic of each pass. Included by nn_ffn_cases_*.cpp only.
#pragma once

#include <algorithm>
#include <memory>

#include "nn_cases.hpp"
#include "nn_reference.hpp"
#include "shardwise/nn/feed_forward.hpp"

namespace shardwise::testing {

using R = Replicated;
template <fixed_string... N> using S = Split<N...>;
template <typename... D> using TS = TensorSharding<D...>;

template <typename A, typename B>
double relative_error(const A& got, const B& want) {
  const double scale = want.norm();
  const double diff = (got.template cast<double>() - want).norm();
  return scale == 0.0 ? diff : diff / scale;
}

inline FfnTraffic as_ffn_traffic(const CommCounters& c) {
  FfnTraffic t;
  t.all_gather = {c.all_gather.traffic, c.all_gather.calls};
  t.reduce_scatter = {c.reduce_scatter.traffic, c.reduce_scatter.calls};
  t.all_reduce = {c.all_reduce.traffic, c.all_reduce.calls};
  return t;
}

inline FfnTraffic difference(const CommCounters& after, const CommCounters& before) {
  FfnTraffic a = as_ffn_traffic(after), b = as_ffn_traffic(before), d;
  d.all_gather = {a.all_gather.traffic - b.all_gather.traffic, a.all_gather.calls - b.all_gather.calls};
  d.reduce_scatter = {a.reduce_scatter.traffic - b.reduce_scatter.traffic, a.reduce_scatter.calls - b.reduce_scatter.calls};
  d.all_reduce = {a.all_reduce.traffic - b.all_reduce.traffic, a.all_reduce.calls - b.all_reduce.calls};
  return d;
}

template <typename Scalar, typename M, typename ShX, typename ShW1, typename ShW2>
FfnCaseResult run_ffn_case(ProcessGroupMesh<M>& groups, FfnShape shape, std::uint64_t seed, const CommCounters* counters) {
  using Layer = FeedForward<Scalar, M, ShX, ShW1, ShW2>;
  using Plan = typename Layer::plan;
  const std::int64_t tokens = shape.b * shape.s;
  // The same data on every rank; the serial reference in double from the values as rounded to Scalar.
  auto data = [](std::int64_t rows, std::int64_t cols, std::uint64_t s) {
    return uniform_matrix(rows, cols, s).template cast<Scalar>().template cast<double>().eval();
  };
  const SerialFfn ref{data(shape.m, shape.h, seed), data(shape.h, shape.m, seed + 1), data(shape.h, 1, seed + 2),
                      data(shape.m, 1, seed + 3)};
  const MatrixXd x_global = data(tokens, shape.m, seed + 4), dy_global = data(tokens, shape.m, seed + 5);
  const auto pass = ref.forward(x_global);
  const auto grads = ref.backward(pass, dy_global);

  Layer layer = Layer::from_global(groups, ref.w1.cast<Scalar>(), ref.b1.cast<Scalar>(), ref.w2.cast<Scalar>(),
                                   ref.b2.cast<Scalar>());
  const auto x = Layer::input_type::distribute(groups, x_global.cast<Scalar>(), shape.b, shape.s);
  const auto dy = Layer::output_type::distribute(groups, dy_global.cast<Scalar>(), shape.b, shape.s);
  typename Layer::Cache cache;

  FfnCaseResult result;
  result.description = Plan::describe();
  result.tolerance = std::is_same_v<Scalar, double> ? 1e-12 : 1e-4;
  const CommCounters zero{};
  const CommCounters& c = counters ? *counters : zero;

  const CommCounters start = c;
  const auto y = layer.forward(x, cache);
  const CommCounters after_forward = c;
  const auto dx = layer.backward(dy, cache);
  const CommCounters after_backward = c;
  layer.backward_into(nullptr, dy, cache);  // a first layer: no dX; the gradients double
  const CommCounters after_first_layer = c;
  result.measured_forward = difference(after_forward, start);
  result.measured_backward = difference(after_backward, after_forward);
  result.measured_first_layer = difference(after_first_layer, after_backward);
  result.only_collectives = after_first_layer.point_to_point == start.point_to_point &&
                            after_first_layer.broadcast == start.broadcast;
  result.modeled_forward = Plan::forward_traffic(groups.mesh(), groups.coordinate(), shape, sizeof(Scalar));
  result.modeled_backward = Plan::backward_traffic(groups.mesh(), groups.coordinate(), shape, sizeof(Scalar));
  result.modeled_first_layer = Plan::backward_traffic(groups.mesh(), groups.coordinate(), shape, sizeof(Scalar), false);

  result.error_y = relative_error(y.to_global(), pass.y);
  result.error_dx = relative_error(dx.to_global(), grads.dx);
  const auto& g = layer.gradients();
  result.error_dw1 = relative_error(g.w1.to_global(), 2.0 * grads.dw1);
  result.error_db1 = relative_error(g.b1.to_global().transpose(), 2.0 * grads.db1);
  result.error_dw2 = relative_error(g.w2.to_global(), 2.0 * grads.dw2);
  result.error_db2 = relative_error(g.b2.to_global().transpose(), 2.0 * grads.db2);
  return result;
}

template <typename Scalar, typename M, typename ShX, typename ShW1, typename ShW2>
void add_ffn_case(std::vector<FfnCase<M>>& cases, std::string name) {
  cases.push_back({std::move(name) + (std::is_same_v<Scalar, double> ? " fp64" : " fp32"),
                   &run_ffn_case<Scalar, M, ShX, ShW1, ShW2>});
}

/// The cases are compiled in three translation units, so that two cores build them in parallel.
void add_megatron_cases(std::vector<FfnCase<Grid2>>& cases);  // nn_ffn_cases_megatron.cpp
void add_fp32_cases(std::vector<FfnCase<Grid2>>& cases);      // nn_ffn_cases_fp32.cpp

}  // namespace shardwise::testing
