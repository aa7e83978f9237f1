// shardwise/plan/matmul_by_time.hpp: plan_matmul_by_time, the plan of least predicted time on
// a given mesh and machine (plan_matmul_any_mesh chooses the mesh as well).
//
// The search by bytes (matmul_search.hpp) prunes by a lower bound on bytes, which says nothing
// of time: a ring that sends more but hides it behind its GEMMs, or SUMMA's broadcasts that
// cost more than their bytes under a binomial tree. So the search runs once per schedule
// family (VariantKind: standard, ring, SUMMA, 2.5D), each giving its plan of fewest bytes, and
// the time model (time_model.hpp) ranks those four, as plan_matmul_any_mesh ranks each mesh's
// plan of fewest bytes.
#pragma once

#include <stdexcept>

#include "shardwise/plan/machine.hpp"
#include "shardwise/plan/matmul_any_mesh.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/plan/matmul_evaluation.hpp"
#include "shardwise/plan/matmul_search.hpp"
#include "shardwise/plan/time_model.hpp"

namespace shardwise {

/// The plan for `problem` on `mesh` of least predicted time on `machine`: of each schedule
/// family's plan of fewest bytes (standard, ring, SUMMA, 2.5D), those predicted within
/// `time_tolerance` of the fastest count as fast as it, and of those the one plan_matmul would
/// rank first by bytes is taken (with a tolerance large enough, plan_matmul's own choice).
/// `predicted` holds its time; describe() names it beside the bytes. Throws
/// std::invalid_argument (in a constant evaluation: a compile error) for what plan_matmul
/// refuses, a machine predicted_time refuses, or a negative tolerance.
constexpr MeshedMatmulChoice plan_matmul_by_time(const detail::block_geometry& mesh, const MatmulProblem& problem,
                                                 const Machine& machine, double time_tolerance = 0.01) {
  detail::check_planner_mesh("shardwise::plan_matmul_by_time", mesh);
  detail::check_matmul_problem("shardwise::plan_matmul_by_time", problem);
  detail::check_machine("shardwise::plan_matmul_by_time", machine);
  if (!(time_tolerance >= 0))
    throw std::invalid_argument("shardwise::plan_matmul_by_time: time_tolerance is negative; give a share of the "
                                "fastest predicted time, 0 or more");
  detail::block_geometry origin = mesh;
  origin.coordinate = {};
  const int ranks = mesh.size();
  constexpr int families = 4;  // VariantKind's
  MeshedMatmulChoice of[families]{};
  double fastest = 0;
  bool any = false;
  for (int family = 0; family < families; ++family) {
    const MatmulChoice choice = detail::search_matmul(origin, problem, family);
    if (!choice.found) continue;
    const PredictedTime t = predicted_time(machine, origin, problem, choice);
    of[family] = {choice, origin, ranks, t};
    if (!any || t.seconds < fastest) fastest = t.seconds;
    any = true;
  }
  MeshedMatmulChoice best{{}, origin, ranks, {}};
  for (const MeshedMatmulChoice& candidate : of)
    if (candidate.choice.found && candidate.predicted->seconds <= fastest * (1 + time_tolerance) &&
        (!best.choice.found || detail::cheaper(candidate.choice, best.choice)))
      best = candidate;
  return best;
}

/// The same for a mesh type (its extents as the object gives them).
template <MeshType M>
constexpr MeshedMatmulChoice plan_matmul_by_time(const M& mesh, const MatmulProblem& problem, const Machine& machine,
                                                 double time_tolerance = 0.01) {
  return plan_matmul_by_time(detail::block_geometry(mesh, typename M::coordinate_type{}), problem, machine,
                             time_tolerance);
}

}  // namespace shardwise
