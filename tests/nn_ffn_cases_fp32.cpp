// The fp32 FeedForward cases (the benchmark's precision): MegatronTP on a line, GSPMD on a grid.
#include "nn_ffn_support.hpp"

namespace shardwise::testing {

void add_fp32_line_cases(std::vector<FfnCase<TpLine>>& cases) {
  add_ffn_case<float, TpLine, TS<R, R, R>, TS<R, S<"tp">>, TS<S<"tp">, R>>(cases, "MegatronTP");
}

void add_fp32_grid_cases(std::vector<FfnCase<Grid2>>& cases) {
  add_ffn_case<float, Grid2, TS<S<"x">, R, S<"y">>, TS<S<"x">, S<"y">>, TS<S<"y">, S<"x">>>(cases, "GSPMD a=x b=y");
}

}  // namespace shardwise::testing
