// FeedForward cases: MegatronTP and MegatronSP over y (x is an axis of independent replicas:
// the layer never communicates along it), fp64; misuse; the serial reference's gradients.
#include "nn_ffn_support.hpp"

namespace shardwise::testing {

namespace {
using MegatronTp = FeedForward<double, Grid2, TS<R, R, R>, TS<R, S<"y">>, TS<S<"y">, R>>;
}  // namespace

double FfnCaseResult::worst_error() const {
  return std::max({error_y, error_dx, error_dw1, error_db1, error_dw2, error_db2});
}

void add_megatron_cases(std::vector<FfnCase<Grid2>>& cases) {
  add_ffn_case<double, Grid2, TS<R, R, R>, TS<R, S<"y">>, TS<S<"y">, R>>(cases, "MegatronTP over y");
  add_ffn_case<double, Grid2, TS<R, S<"y">, R>, TS<R, S<"y">>, TS<S<"y">, R>>(cases, "MegatronSP over y");
}

std::string ffn_misuse_problems(ProcessGroupMesh<Grid2>& groups) {
  using Layer = MegatronTp;  // the type of the case above: nothing new to compile
  std::string problems;
  auto expect_throw = [&](const char* what, auto&& f) {
    try {
      f();
      problems += std::string(what) + " did not throw; ";
    } catch (const std::invalid_argument&) {
    }
  };
  Layer layer(groups, 4, 6);
  Layer::Cache cache;
  const Layer::input_type wrong_width(groups, 2, 3, 5);
  expect_throw("forward with a wrong model width", [&] { (void)layer.forward(wrong_width, cache); });
  const Layer::output_type dy(groups, 2, 3, 4);
  expect_throw("backward before forward", [&] { (void)layer.backward(dy, cache); });
  const Layer::input_type x(groups, 2, 3, 4);
  (void)layer.forward(x, cache);
  const Layer::output_type other_batch(groups, 3, 3, 4);
  expect_throw("backward with another batch", [&] { (void)layer.backward(other_batch, cache); });
  try {
    (void)layer.backward(dy, cache);
  } catch (const std::exception& e) {
    problems += std::string("a correct backward threw: ") + e.what() + "; ";
  }
  expect_throw("from_global with W2 shaped like W1", [&] {
    (void)Layer::from_global(groups, MatrixXd(4, 6), VectorXd(6), MatrixXd(4, 6), VectorXd(4));
  });
  return problems;
}

double serial_ffn_finite_difference_error() {
  const SerialFfn ffn{uniform_matrix(5, 7, 1), uniform_matrix(7, 5, 2), uniform_matrix(7, 1, 3), uniform_matrix(5, 1, 4)};
  return ffn_finite_difference_error(ffn, uniform_matrix(6, 5, 5), uniform_matrix(6, 5, 6));
}

}  // namespace shardwise::testing
