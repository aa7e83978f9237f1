// FeedForward cases on a 2-D mesh: GSPMD over (x, y) and (y, x), and Megatron over y with x
// an axis of independent replicas (the layer never communicates along it).
#include "nn_ffn_support.hpp"

namespace shardwise::testing {

std::vector<FfnCase<Grid2>> ffn_grid_cases() {
  std::vector<FfnCase<Grid2>> cases;
  add_ffn_case<double, Grid2, TS<S<"x">, R, S<"y">>, TS<S<"x">, S<"y">>, TS<S<"y">, S<"x">>>(cases, "GSPMD a=x b=y");
  add_ffn_case<double, Grid2, TS<S<"y">, R, S<"x">>, TS<S<"y">, S<"x">>, TS<S<"x">, S<"y">>>(cases, "GSPMD a=y b=x");
  add_fp32_grid_cases(cases);
  add_ffn_case<double, Grid2, TS<R, R, R>, TS<R, S<"y">>, TS<S<"y">, R>>(cases, "MegatronTP over y");
  add_ffn_case<double, Grid2, TS<R, S<"y">, R>, TS<R, S<"y">>, TS<S<"y">, R>>(cases, "MegatronSP over y");
  return cases;
}

}  // namespace shardwise::testing
