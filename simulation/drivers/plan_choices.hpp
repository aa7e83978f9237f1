// The plans the scaling programs compare for C = A B on P ranks (see scaling_model.cpp, which
// has its own copy of the same choices, and simulate_matmul.cpp):
//   - best: the planner's cheapest plan over every mesh of P ranks with one to three axes (the
//     simulated programs also allow meshes of fewer ranks, leaving the others idle),
//   - 2-D SUMMA on the squarest q1 x q2 grid (A, B and C blocked [x, y]),
//   - 2.5D on q x q x c with the best c that fits (A stored [x, (y, z)], B [(x, z), y], gathered
//     over the layers z first, C scattered over them: [x, (y, z)]).
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "shardwise/plan/describe.hpp"
#include "shardwise/plan/sharding_planner.hpp"

namespace shardwise::bench {

inline detail::block_geometry mesh_of(const std::vector<int>& extents) {
  detail::block_geometry g;
  for (int e : extents) g.extents[static_cast<std::size_t>(g.ndim++)] = e;
  return g;
}

inline std::string mesh_text(const detail::block_geometry& g) {
  std::string s;
  for (int a = 0; a < g.ndim; ++a) s += (a ? "x" : "") + std::to_string(g.extents[static_cast<std::size_t>(a)]);
  return s;
}

/// The ranks a mesh has (of P ranks, the first that many run the plan; the others idle).
inline int ranks_of(const detail::block_geometry& mesh) {
  int used = 1;
  for (int a = 0; a < mesh.ndim; ++a) used *= mesh.extents[static_cast<std::size_t>(a)];
  return used;
}

/// The mesh as the scaling tables print it, with the ranks of `p` it leaves idle: "3x2 (1 idle)".
inline std::string mesh_text(const detail::block_geometry& mesh, int p) {
  const int idle = p - ranks_of(mesh);
  return mesh_text(mesh) + (idle > 0 ? " (" + std::to_string(idle) + " idle)" : "");
}

inline std::string axes_text(const detail::tensor_axes& t) {
  constexpr std::string_view names[] = {"x", "y", "z"};
  std::string s = "[";
  for (int d = 0; d < t.rank; ++d) s += (d ? ", " : "") + detail::axes_text_of(t.dim(d), names);
  return s + "]";
}

inline std::string variant_text(const MatmulChoice& c) {
  constexpr std::string_view names[] = {"x", "y", "z"};
  switch (c.variant) {
    case detail::VariantKind::standard: return "standard";
    case detail::VariantKind::ring: return "ring";
    case detail::VariantKind::summa: return "SUMMA";
    case detail::VariantKind::summa_25d: return "2.5D over " + detail::axes_text_of(c.layers, names);
  }
  return "?";
}

inline std::string plan_text(const MatmulChoice& c) {
  return "A" + axes_text(c.a) + " B" + axes_text(c.b) + " C" + axes_text(c.c) + ", " + variant_text(c);
}

inline detail::tensor_axes matrix(detail::axis_list rows, detail::axis_list cols) {
  detail::tensor_axes t;
  t.rank = 2;
  t.dim(0) = rows;
  t.dim(1) = cols;
  return t;
}

/// The planner's cheapest plan over every mesh of P ranks (with `options.allow_idle`, also of
/// fewer: the mesh's size says how many it uses); `mesh` receives its mesh.
inline MatmulChoice best_plan(int p, const MatmulProblem& problem, detail::block_geometry& mesh,
                              const AnyMeshOptions& options = {}) {
  const MeshedMatmulChoice best = plan_matmul_any_mesh(p, problem, options);
  if (best.choice.found) mesh = best.mesh;
  return best.choice;
}

/// 2-D SUMMA on the squarest grid of P ranks (P x 1 when P is prime).
inline MatmulChoice summa_2d(int p, const MatmulProblem& problem, detail::block_geometry& mesh) {
  int q = 1;
  for (int a = 1; a * a <= p; ++a)
    if (p % a == 0) q = a;
  mesh = mesh_of({p / q, q});
  const detail::tensor_axes blocks = matrix({0}, {1});
  return detail::evaluate_matmul(mesh, problem, blocks, blocks, blocks, blocks, blocks, detail::VariantKind::summa, {})
      .choice;
}

/// 2.5D on q x q x c from operands stored once, for the c (at least 2) with the fewest bytes
/// that fits; not found when P is no q * q * c with q, c >= 2.
inline MatmulChoice summa_25d(int p, const MatmulProblem& problem, detail::block_geometry& mesh) {
  MatmulChoice best;
  for (int c = 2; c <= p; ++c) {
    if (p % c != 0) continue;
    const int q = static_cast<int>(std::lround(std::sqrt(static_cast<double>(p / c))));
    if (q < 2 || q * q * c != p) continue;
    const detail::block_geometry g = mesh_of({q, q, c});
    const detail::tensor_axes kernel = matrix({0}, {1});
    const auto e = detail::evaluate_matmul(g, problem, matrix({0}, {1, 2}), matrix({0, 2}, {1}), kernel, kernel,
                                           matrix({0}, {1, 2}), detail::VariantKind::summa_25d, {2});
    if (e.fits && (!best.found || detail::cheaper(e.choice, best))) {
      best = e.choice;
      mesh = g;
    }
  }
  return best;
}

}  // namespace shardwise::bench
