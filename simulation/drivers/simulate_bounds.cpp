// simulate_bounds: the bytes column of the simulated table for every cell, from the planner and
// the cost model alone (no simulation, no MPI: a second or so for the whole table). For each
// line "P SHAPE M K N" on standard input, the plan the simulated "best" cell runs (the
// planner's cheapest over every mesh of P ranks or of fewer, the others idle, at most 4 GiB per
// rank, as simulate_matmul chooses it), the modeled bytes its busiest rank sends, the
// memory-independent lower bound on P ranks (sw::matmul_lower_bound: SPAA 2022, rectangular,
// all three regimes) and their ratio, as a Markdown table. Where a cell was simulated, its
// ranks counted the same bytes (simulate_matmul checks every rank against this model).
//
//   simulation/simulate bounds          (builds this and feeds it the table's P and shapes)
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>

#include "plan_choices.hpp"

namespace sw = shardwise;

int main() {
  constexpr std::int64_t budget = std::int64_t{4} << 30;  // per rank, as in simulate_matmul
  std::printf("| P | shape | m x k x n | best plan's mesh | busiest rank's MiB | bound MiB | over the bound |\n"
              "|---:|---|---|---|---:|---:|---:|\n");
  int p = 0, over = 0, cells = 0;
  std::string shape;
  std::int64_t m = 0, k = 0, n = 0;
  double worst = 0;
  while (std::cin >> p >> shape >> m >> k >> n) {
    const sw::MatmulProblem problem{{.m = m, .k = k, .n = n}, sizeof(double), budget};
    sw::detail::block_geometry mesh{};
    const sw::MatmulChoice best = sw::bench::best_plan(p, problem, mesh, {.allow_idle = true});
    const double bound = static_cast<double>(sw::matmul_lower_bound(m, k, n, p).words) * sizeof(double);
    if (!best.found || bound <= 0) {
      std::printf("| %d | %s | %lld x %lld x %lld | none fits | – | %.3f | – |\n", p, shape.c_str(),
                  static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(n), bound / (1 << 20));
      continue;
    }
    const double ratio = static_cast<double>(best.traffic.bytes) / bound;
    const std::string mesh_text = sw::bench::mesh_text(mesh, p);
    std::printf("| %d | %s | %lld x %lld x %lld | %s | %.3f | %.3f | %.3f |\n", p, shape.c_str(),
                static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(n), mesh_text.c_str(),
                static_cast<double>(best.traffic.bytes) / (1 << 20), bound / (1 << 20), ratio);
    ++cells;
    if (ratio > 1.1) ++over;
    if (ratio > worst) worst = ratio;
  }
  std::printf("\n%d of %d within 1.1 of the bound; the largest ratio %.3f.\n", cells - over, cells, worst);
  return 0;
}
