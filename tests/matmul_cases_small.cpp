#include "matmul_cases.hpp"

namespace shardwise::testing {

std::vector<PlanCase<Grid>> grid_cases_fp32() {
  std::vector<PlanCase<Grid>> cases;
  add_seed_cases<float>(cases);
  add_case<Grid, float, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, NaturalOutput, variant::Summa<3>>(cases);
  add_case<Grid, float, TS<S<"x">, R>, TS<S<"y">, R>, NaturalOutput, variant::Ring>(cases);
  return cases;
}

std::vector<PlanCase<Cube>> cube_cases_fp64() {
  std::vector<PlanCase<Cube>> cases;
  for_pairs<Cube, double, TS<S<"x">, S<"z">>, TS<R, S<"z", "y">>>::template add<TS<S<"z">, S<"y">>, TS<S<"y", "z">, R>>(cases);
  for_pairs<Cube, double, TS<S<"x", "y">, S<"z">>>::template add<TS<S<"x">, R>, TS<S<"z">, R>>(cases);
  return cases;
}

}  // namespace shardwise::testing
