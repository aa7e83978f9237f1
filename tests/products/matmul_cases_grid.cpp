#include "matmul_cases.hpp"

namespace shardwise::testing {

std::vector<PlanCase<Grid>> grid_cases_fp64() {
  std::vector<PlanCase<Grid>> cases;
  for_pairs<Grid, double, TS<R, S<"y">>, TS<R, S<"x">>, TS<R, S<"x", "y">>>::template add<
      TS<S<"y">, R>, TS<S<"x">, R>, TS<S<"x", "y">, R>>(cases);
  for_pairs<Grid, double, TS<S<"x">, S<"y">>, TS<S<"y", "x">, R>>::template add<TS<S<"x">, R>, TS<S<"x">, S<"y">>>(cases);
  for_pairs<Grid, double, TS<S<"x">, R>, TS<R, S<"y", "x">>>::template add<TS<R, S<"y">>, TS<S<"y", "x">, R>>(cases);
  return cases;
}

}  // namespace shardwise::testing
