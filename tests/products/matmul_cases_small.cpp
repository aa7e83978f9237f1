#include "matmul_cases.hpp"

namespace shardwise::testing {

std::vector<PlanCase<Grid>> grid_cases_fp32() {
  std::vector<PlanCase<Grid>> cases;
  add_seed_cases<float>(cases);
  add_case<Grid, float, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, NaturalOutput, variant::Summa<3>>(cases);
  add_case<Grid, float, TS<S<"x">, R>, TS<S<"y">, R>, NaturalOutput, variant::Ring>(cases);
  return cases;
}

std::vector<PlanCase<Grid>> grid_cases_complex() {
  using Z = std::complex<double>;
  std::vector<PlanCase<Grid>> cases;
  add_seed_cases<Z>(cases);
  add_case<Grid, Z, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, NaturalOutput, variant::Summa<3>>(cases);
  add_case<Grid, Z, TS<S<"x">, R>, TS<S<"y">, R>, NaturalOutput, variant::Ring>(cases);
  add_case<Grid, std::complex<float>, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>, NaturalOutput, variant::Summa<3>>(cases);
  return cases;
}

std::vector<PlanCase<Cube>> cube_cases_fp64() {
  std::vector<PlanCase<Cube>> cases;
  for_pairs<Cube, double, TS<S<"x">, S<"z">>, TS<R, S<"z", "y">>>::template add<TS<S<"z">, S<"y">>, TS<S<"y", "z">, R>>(cases);
  for_pairs<Cube, double, TS<S<"x", "y">, S<"z">>>::template add<TS<S<"x">, R>, TS<S<"z">, R>>(cases);
  add_25d_cases(cases);
  return cases;
}

std::vector<PlanCase<Cube>> cube_cases_complex() {
  using Z = std::complex<double>;
  using G = TS<S<"x">, S<"y">>;
  using Layers = variant::Summa25DPanels<3, "z">;
  std::vector<PlanCase<Cube>> cases;
  add_case<Cube, Z, G, G, NaturalOutput, Layers>(cases);
  add_case<Cube, Z, G, G, TS<S<"x">, S<"y", "z">>, Layers>(cases);
  add_case<Cube, Z, G, G, TS<S<"x">, S<"y">, P<"z">>, Layers>(cases);
  add_case<Cube, Z, TS<S<"x">, S<"y", "z">>, TS<S<"x", "z">, S<"y">>, TS<S<"x">, S<"y", "z">>,
           variant::Via<G, G, Layers>>(cases);
  add_case<Cube, std::complex<float>, G, G, NaturalOutput, Layers>(cases);
  return cases;
}

void add_25d_cases(std::vector<PlanCase<Cube>>& cases) {
  // 2.5D on layers z: A and B = [x, y], replicated over z; C reduced over z (AllReduce), scattered
  // into its columns (ReduceScatter), or kept Partial.
  using G = TS<S<"x">, S<"y">>;
  using Layers = variant::Summa25DPanels<3, "z">;
  add_case<Cube, double, G, G, NaturalOutput, Layers>(cases);
  add_case<Cube, double, G, G, TS<S<"x">, S<"y", "z">>, Layers>(cases);
  add_case<Cube, double, G, G, TS<S<"x", "z">, S<"y">>, Layers>(cases);
  add_case<Cube, double, G, G, TS<S<"x">, S<"y">, P<"z">>, Layers>(cases);
  // Complex too: gemm's alpha, beta and op 'C' / 'T' on 2.5D (matmul_support.hpp's run_case).
  add_case<Cube, std::complex<double>, G, G, NaturalOutput, Layers>(cases);
  // From operands stored once: gathered over z first (via), then 2.5D; and the 3-D algorithm
  // (m over x, k over z, n over y), which gathers A over y and B over x and scatters C over z.
  add_case<Cube, double, TS<S<"x">, S<"y", "z">>, TS<S<"x", "z">, S<"y">>, TS<S<"x">, S<"y", "z">>,
           variant::Via<G, G, Layers>>(cases);
  add_case<Cube, double, TS<S<"x">, S<"z", "y">>, TS<S<"z", "x">, S<"y">>, TS<S<"x">, S<"y", "z">>,
           variant::Via<TS<S<"x">, S<"z">>, TS<S<"z">, S<"y">>>>(cases);
}

}  // namespace shardwise::testing
