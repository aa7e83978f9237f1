#include "matmul_cases.hpp"

namespace shardwise::testing {

template <typename Scalar>
static std::vector<PlanCase<Line>> line_cases() {
  std::vector<PlanCase<Line>> cases;
  for_pairs<Line, Scalar, TS<R, R>, TS<S<"x">, R>, TS<R, S<"x">>>::template add<TS<R, R>, TS<S<"x">, R>, TS<R, S<"x">>>(cases);
  return cases;
}

std::vector<PlanCase<Line>> line_cases_fp64() { return line_cases<double>(); }
std::vector<PlanCase<Line>> line_cases_fp32() { return line_cases<float>(); }
std::vector<PlanCase<Line>> line_cases_complex() {
  std::vector<PlanCase<Line>> cases = line_cases<std::complex<double>>();
  for_pairs<Line, std::complex<float>, TS<R, S<"x">>, TS<S<"x">, R>>::template add<TS<S<"x">, R>, TS<R, S<"x">>>(cases);
  return cases;
}

}  // namespace shardwise::testing
