// simulate_predict: the time model's prediction for the cells of the simulated table, from the
// planner and the model alone (no simulation, no MPI). For each line "P SHAPE M K N" on
// standard input and each simulated platform (sw::machines::simulated_fat_tree and
// simulated_torus), the plans the "best", "summa" and "25d" cells run (plan_choices.hpp, as
// simulate_matmul chooses them: at most 4 GiB per rank, "best" over every mesh of P ranks or
// of down to 3/4 of them) and their predicted time, then the plan the planner chooses by
// predicted time on that platform's machine, and which of the three it is ("none": a plan the
// table did not simulate). One line each, fields separated by tabs:
//
//   cell  PLATFORM P SHAPE PLAN PREDICTED_S GEMM_S MESH PLAN_TEXT
//   time  PLATFORM P SHAPE SAME_AS PREDICTED_S GEMM_S MESH PLAN_TEXT BYTES_PLAN_PREDICTED_S
//
//   simulation/simulate predict        (builds this and feeds it the table's P and shapes)
//   simulation/report.py      (the same, for the report's "predicted" column)
//
// With `--machine NAME GEMM_FLOPS LINK_BYTES LINK_LATENCY` it predicts on that machine alone
// (a fat tree, binomial broadcasts), as `simulation/simulate validate` does with this
// machine's calibrated values to set the model beside real runs.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "plan_choices.hpp"
#include "shardwise/plan/machine.hpp"
#include "shardwise/plan/time_model.hpp"

namespace sw = shardwise;

namespace {

struct planned {
  sw::MatmulChoice choice{};
  sw::detail::block_geometry mesh{};
  int ranks = 0;
};

std::string text_of(const planned& p) {
  return sw::bench::mesh_text(p.mesh, p.ranks) + "\t" + sw::bench::plan_text(p.choice);
}

}  // namespace

int main(int argc, char** argv) {
  constexpr std::int64_t budget = std::int64_t{4} << 30;  // per rank, as in simulate_matmul
  std::vector<std::pair<std::string, sw::Machine>> platforms = {{"fat_tree", sw::machines::simulated_fat_tree},
                                                                {"torus", sw::machines::simulated_torus}};
  if (argc == 6 && std::string(argv[1]) == "--machine") {
    platforms = {{argv[2], sw::Machine{.gemm_flops_per_second = std::stod(argv[3]),
                                       .link_bytes_per_second = std::stod(argv[4]),
                                       .link_latency_seconds = std::stod(argv[5])}}};
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: simulate_predict [--machine NAME GEMM_FLOPS LINK_BYTES LINK_LATENCY] < cells\n");
    return 2;
  }
  int p = 0;
  std::string shape;
  std::int64_t m = 0, k = 0, n = 0;
  while (std::cin >> p >> shape >> m >> k >> n) {
    const sw::MatmulProblem problem{{.m = m, .k = k, .n = n}, sizeof(double), budget};
    // The table's plans do not depend on the platform.
    planned cells[3];
    const char* names[3] = {"best", "summa", "25d"};
    cells[0].choice = sw::bench::best_plan(p, problem, cells[0].mesh, {.allow_idle = true});
    cells[1].choice = sw::bench::summa_2d(p, problem, cells[1].mesh);
    cells[2].choice = sw::bench::summa_25d(p, problem, cells[2].mesh);
    for (planned& c : cells) c.ranks = p;
    for (const auto& [platform, machine] : platforms) {
      double predicted[3] = {0, 0, 0};
      for (int i = 0; i < 3; ++i) {
        if (!cells[i].choice.found) continue;
        const sw::PredictedTime t = sw::predicted_time(machine, cells[i].mesh, problem, cells[i].choice);
        predicted[i] = t.seconds;
        std::printf("cell\t%s\t%d\t%s\t%s\t%.6f\t%.6f\t%s\n", platform.c_str(), p, shape.c_str(), names[i], t.seconds,
                    t.compute_seconds, text_of(cells[i]).c_str());
      }
      const sw::MeshedMatmulChoice by_time =
          sw::plan_matmul_any_mesh(p, problem, {.allow_idle = true, .machine = machine});
      if (!by_time.choice.found) continue;
      const planned chosen{by_time.choice, by_time.mesh, p};
      const std::string chosen_text = text_of(chosen);
      const char* same_as = "none";
      for (int i = 0; i < 3; ++i)
        if (cells[i].choice.found && text_of(cells[i]) == chosen_text) {
          same_as = names[i];
          break;
        }
      std::printf("time\t%s\t%d\t%s\t%s\t%.6f\t%.6f\t%s\t%.6f\n", platform.c_str(), p, shape.c_str(), same_as,
                  by_time.predicted->seconds, by_time.predicted->compute_seconds, chosen_text.c_str(), predicted[0]);
    }
  }
  return 0;
}
