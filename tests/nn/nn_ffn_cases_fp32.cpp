// The fp32 FeedForward cases (the benchmark's precision): MegatronTP over y, GSPMD on x * y.
#include "nn_ffn_support.hpp"

namespace shardwise::testing {

void add_fp32_cases(std::vector<FfnCase<Grid2>>& cases) {
  add_ffn_case<float, Grid2, TS<R, R, R>, TS<R, S<"y">>, TS<S<"y">, R>>(cases, "MegatronTP over y");
  add_ffn_case<float, Grid2, TS<S<"x">, R, S<"y">>, TS<S<"x">, S<"y">>, TS<S<"y">, S<"x">>>(cases, "GSPMD a=x b=y");
}

}  // namespace shardwise::testing
