// FeedForward cases on one tensor-parallel axis: Unsharded, MegatronTP, MegatronSP.
#include "nn_ffn_support.hpp"

namespace shardwise::testing {

double FfnCaseResult::worst_error() const {
  return std::max({error_y, error_dx, error_dw1, error_db1, error_dw2, error_db2});
}

std::vector<FfnCase<TpLine>> ffn_line_cases() {
  using X = TS<R, R, R>;
  using Xs = TS<R, S<"tp">, R>;
  using W1 = TS<R, S<"tp">>;
  using W2 = TS<S<"tp">, R>;
  std::vector<FfnCase<TpLine>> cases;
  add_ffn_case<double, TpLine, X, TS<R, R>, TS<R, R>>(cases, "Unsharded");
  add_ffn_case<double, TpLine, X, W1, W2>(cases, "MegatronTP");
  add_ffn_case<double, TpLine, Xs, W1, W2>(cases, "MegatronSP");
  add_ffn_case<float, TpLine, X, W1, W2>(cases, "MegatronTP");
  add_ffn_case<float, TpLine, Xs, W1, W2>(cases, "MegatronSP");
  return cases;
}

double serial_ffn_finite_difference_error() {
  const SerialFfn ffn{uniform_matrix(5, 7, 1), uniform_matrix(7, 5, 2), uniform_matrix(7, 1, 3), uniform_matrix(5, 1, 4)};
  return ffn_finite_difference_error(ffn, uniform_matrix(6, 5, 5), uniform_matrix(6, 5, 6));
}

}  // namespace shardwise::testing
