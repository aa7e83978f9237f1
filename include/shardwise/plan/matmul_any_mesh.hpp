// shardwise/plan/matmul_any_mesh.hpp: the cheapest matmul plan when the mesh is a choice too:
// meshes_of lists the meshes of P ranks, plan_matmul_any_mesh plans on each (plan_matmul) and,
// with AnyMeshOptions::allow_idle, on meshes of fewer ranks; MeshedMatmulChoice is its answer.
// Given AnyMeshOptions::machine, the cheapest is the one of least predicted time (time_model.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "shardwise/layout.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/describe.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/plan/matmul_evaluation.hpp"
#include "shardwise/plan/matmul_search.hpp"
#include "shardwise/plan/time_model.hpp"

namespace shardwise {

namespace detail {

/// "; predicted 0.461 s (GEMMs 0.458 s), busiest rank sends 12582912 bytes": what
/// MeshedMatmulChoice::describe() adds when the plan was chosen by time.
inline std::string predicted_text(const PredictedTime& t, const Traffic& traffic) {
  char text[128];
  std::snprintf(text, sizeof text, "; predicted %.4g s (GEMMs %.4g s), busiest rank sends %lld bytes", t.seconds,
                t.compute_seconds, static_cast<long long>(traffic.bytes));
  return text;
}

}  // namespace detail

/// A plan, the mesh it runs on, and the ranks it leaves idle: the mesh is laid over ranks 0 to
/// ranks_used() - 1 of the `ranks` planned for; the others hold no block and send nothing.
struct MeshedMatmulChoice {
  MatmulChoice choice{};            ///< The plan; `found` false when none fits on any mesh.
  detail::block_geometry mesh{};    ///< Its mesh (extents; coordinates zero).
  int ranks = 0;                    ///< The ranks planned for (the communicator's).
  /// Its predicted time on AnyMeshOptions::machine, when one was given.
  std::optional<PredictedTime> predicted{};

  /// The ranks the plan runs on: the mesh's size (0 when none was found).
  [[nodiscard]] constexpr int ranks_used() const {
    return choice.found ? mesh.size() : 0;
  }
  /// Ranks ranks_used() .. ranks - 1: in none of the plan's groups.
  [[nodiscard]] constexpr int idle_ranks() const { return choice.found ? ranks - ranks_used() : 0; }

  /// "2 x 3 mesh on ranks 0-5 of 7 (rank 6 idle): A[x, y] B[x, y] C[x, y]: SUMMA: Broadcast ...",
  /// the mesh axes named x, y, z, w, ... in order.
  [[nodiscard]] std::string describe() const {
    if (!choice.found) return "no plan fits the budget";
    static constexpr std::string_view names[] = {"x", "y", "z", "w", "v", "u", "t", "s", "r", "q", "p", "o", "l", "j", "i", "h"};
    std::string text;
    for (int a = 0; a < mesh.ndim; ++a) text += (a ? " x " : "") + std::to_string(mesh.extents[static_cast<std::size_t>(a)]);
    const int used = ranks_used();
    text += " mesh on ";
    text += used == 1 ? std::string("rank 0") : "ranks 0-" + std::to_string(used - 1);
    text += " of " + std::to_string(ranks);
    if (used < ranks)
      text += used + 1 == ranks ? " (rank " + std::to_string(used) + " idle)"
                                : " (ranks " + std::to_string(used) + "-" + std::to_string(ranks - 1) + " idle)";
    auto layout = [&](const detail::tensor_axes& t) {
      return "[" + detail::axes_text_of(t.dim(0), names) + ", " + detail::axes_text_of(t.dim(1), names) + "]";
    };
    text += ": A" + layout(choice.a) + " B" + layout(choice.b) + " C" + layout(choice.c) + ": ";
    text += choice.plan.steps.empty() ? std::string("local GEMM")
                                      : detail::describe_schedule(choice.plan.steps, detail::matmul_names, names);
    if (predicted) text += detail::predicted_text(*predicted, choice.traffic);
    return text;
  }
};

/// How plan_matmul_any_mesh may use the ranks.
struct AnyMeshOptions {
  /// Whether the plan may run on fewer ranks than given, leaving the others idle (the caller
  /// then runs it on the first ranks_used(), a sub-communicator): when that sends fewer bytes
  /// from the busiest rank by a larger factor than it gives each rank more of the product, as a
  /// prime number of ranks may (7 ranks: a 1-D ring; 6: a 2 x 3 grid).
  bool allow_idle = false;
  /// The largest share of the ranks a plan may leave idle.
  double max_idle_share = 0.25;

  /// The fewest of `ranks` ranks a plan may run on: all of them unless allow_idle, else
  /// (1 - max_idle_share) of them rounded up, and at least 2 (a 1-rank plan computes it all).
  /// One definition for the planner and for peers that search grids the same way.
  constexpr int fewest_ranks(int ranks) const {
    if (!allow_idle) return ranks;
    const int fewest = static_cast<int>(static_cast<double>(ranks) * (1 - max_idle_share) + 0.999999);
    return std::max(fewest, std::min(ranks, 2));
  }

  /// The machine to plan for: the plan of least predicted time on it (time_model.hpp), of the
  /// plans of fewest bytes on each mesh; without one, the plan of fewest bytes.
  std::optional<Machine> machine{};
  /// With a machine, the plans predicted within this share of the fastest count as fast as it,
  /// and of those the one chosen by bytes (as without a machine) is taken: the model does not
  /// resolve finer differences (docs/scaling.md), and a plan that sends many times the bytes
  /// for a gain below them would be a bet on it.
  double time_tolerance = 0.01;
};

/// Every mesh of `ranks` ranks with one to three axes, the later ones of at least 2 and the
/// extents non-increasing: {P}, {P/a, a}, {P/a/b, b, a}.
constexpr std::vector<detail::block_geometry> meshes_of(int ranks) {
  if (ranks < 1) throw std::invalid_argument("shardwise::meshes_of: the number of ranks is " + detail::decimal(ranks) + "; give at least 1");
  auto mesh = [](std::initializer_list<int> extents) {
    detail::block_geometry g;
    for (int e : extents) g.extents[static_cast<std::size_t>(g.ndim++)] = e;
    return g;
  };
  std::vector<detail::block_geometry> result{mesh({ranks})};
  for (int a = 2; a * a <= ranks; ++a)
    if (ranks % a == 0) result.push_back(mesh({ranks / a, a}));
  for (int a = 2; a * a * a <= ranks; ++a)
    if (ranks % a == 0)
      for (int b = a; a * b * b <= ranks; ++b)
        if ((ranks / a) % b == 0) result.push_back(mesh({ranks / a / b, b, a}));
  return result;
}

/// The cheapest plan over every mesh of `ranks` ranks (meshes_of): when the data is
/// redistributed anyway, as the ScaLAPACK drop-in does, the mesh is a choice too. With
/// `options.allow_idle`, also over the meshes of fewer ranks, down to (1 - max_idle_share) of
/// them (and at least 2): a plan on P' of P ranks is compared by its busiest rank's bytes times
/// P / P' (each of its ranks computes P / P' times a full share), so that idling pays only
/// where it cuts the bytes by more. Fewer ranks are skipped where the lower bound
/// (matmul_lower_bound, times P / P') already exceeds the best found.
/// With `options.machine`, plans are compared by their predicted time on it instead (of each
/// mesh, its plan of fewest bytes): idle ranks then cost what they do, each of the others
/// computing more, and a broadcast what its algorithm makes it cost. Of the plans within
/// `options.time_tolerance` of the fastest, the one of fewest bytes (weighed as above) is
/// chosen. Fewer ranks are skipped where the time bound (their share of the flops, and the
/// lower bound's bytes over a link) exceeds that reach.
/// Throws std::invalid_argument (in a constant evaluation: a compile error) for fewer than 1
/// rank, a problem plan_matmul refuses or a machine predicted_time refuses.
constexpr MeshedMatmulChoice plan_matmul_any_mesh(int ranks, const MatmulProblem& problem,
                                                  const AnyMeshOptions& options = {}) {
  if (ranks < 1) throw std::invalid_argument("shardwise::plan_matmul_any_mesh: the number of ranks is " + detail::decimal(ranks) + "; give at least 1");
  detail::check_matmul_problem("shardwise::plan_matmul_any_mesh", problem);
  if (options.machine) detail::check_machine("shardwise::plan_matmul_any_mesh", *options.machine);
  if (options.machine && !(options.time_tolerance >= 0)) throw std::invalid_argument("shardwise::plan_matmul_any_mesh: time_tolerance is negative; give a share of the fastest predicted time, 0 or more");
  MeshedMatmulChoice best;
  best.ranks = ranks;
  double best_weight = 0;
  // By bytes: a plan on P' of P ranks weighs its busiest rank's bytes times P / P'.
  auto offer = [&](const MeshedMatmulChoice& candidate) {
    const int used = candidate.ranks_used();
    const double weight = static_cast<double>(candidate.choice.traffic.bytes) * (static_cast<double>(ranks) / used);
    const bool better = !best.choice.found || weight < best_weight ||
                        (weight == best_weight && used == best.ranks_used() && detail::cheaper(candidate.choice, best.choice));
    if (better) best = candidate, best_weight = weight;
  };
  // By time: every mesh's plan and its prediction, chosen from once all are known.
  std::vector<MeshedMatmulChoice> timed;
  double fastest = 0;
  auto consider = [&](int used) {
    for (const detail::block_geometry& g : meshes_of(used)) {
      const MatmulChoice c = plan_matmul(g, problem);
      if (!c.found) continue;
      if (!options.machine) {
        offer({c, g, ranks});
        continue;
      }
      const PredictedTime t = predicted_time(*options.machine, g, problem, c);
      if (timed.empty() || t.seconds < fastest) fastest = t.seconds;
      timed.push_back({c, g, ranks, t});
    }
  };
  auto choose = [&] {
    if (options.machine)
      for (const MeshedMatmulChoice& candidate : timed)
        if (candidate.predicted->seconds <= fastest * (1 + options.time_tolerance)) offer(candidate);
    return best;
  };
  consider(ranks);
  if (!options.allow_idle) return choose();
  const double flops = 2.0 * static_cast<double>(problem.shape.m) * static_cast<double>(problem.shape.k) *
                       static_cast<double>(problem.shape.n);
  for (int used = ranks - 1; used >= options.fewest_ranks(ranks); --used) {
    const double bound_bytes = static_cast<double>(problem.scalar_bytes) *
                               matmul_lower_bound(problem.shape.m, problem.shape.k, problem.shape.n, used).words;
    // The bound holds for balanced blocks; a margin keeps uneven ones in.
    if (options.machine) {
      const double bound = std::max(flops / used / options.machine->gemm_flops_per_second,
                                    bound_bytes / options.machine->link_bytes_per_second);
      if (!timed.empty() && bound > 1.01 * fastest * (1 + options.time_tolerance)) continue;
    } else if (best.choice.found && bound_bytes * static_cast<double>(ranks) / used > 1.01 * best_weight) {
      continue;
    }
    consider(used);
  }
  return choose();
}

}  // namespace shardwise
