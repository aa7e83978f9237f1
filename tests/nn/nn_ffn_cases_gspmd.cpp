// FeedForward cases: Unsharded, and the seed's GSPMD policy on x * y (fp64); the pool of all cases.
#include "nn_ffn_support.hpp"

namespace shardwise::testing {

std::vector<FfnCase<Grid2>> ffn_cases() {
  std::vector<FfnCase<Grid2>> cases;
  add_ffn_case<double, Grid2, TS<R, R, R>, TS<R, R>, TS<R, R>>(cases, "Unsharded");
  add_ffn_case<double, Grid2, TS<S<"x">, R, S<"y">>, TS<S<"x">, S<"y">>, TS<S<"y">, S<"x">>>(cases, "GSPMD a=x b=y");
  add_megatron_cases(cases);
  add_fp32_cases(cases);
  return cases;
}

}  // namespace shardwise::testing
