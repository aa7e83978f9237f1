// The cost model at scale: C = A B in fp64, every operand stored once (each element on one rank),
// the modeled bytes sent by the busiest rank next to the memory-independent lower bound in its
// rectangular form (sw::matmul_lower_bound: Al Daas, Ballard, Grigori, Kumar, Rouse, SPAA 2022,
// all three regimes), and their ratio.
//   1. m = n = k in {4096, 32768} on P in {8, 64, 512, 4096} with at most 4 GiB per rank:
//      - the planner's best plan (sw::plan_matmul over every mesh of P ranks with up to three axes),
//      - 2-D SUMMA on the squarest q1 x q2 grid (A, B and C blocked [x, y]),
//      - 2.5D on q x q x c with the best c that fits (A stored [x, (y, z)], B [(x, z), y], gathered
//        over the layers z first, C scattered over them: [x, (y, z)]).
//   2. The planner's best over P in {6, 7, 8, 12, 27, 64, 100, 127, 512, 1000, 4096} (primes,
//      non-cubes and cubes) for square, tall-skinny, large-k and flat shapes, with 4 GiB per rank
//      and with three times the smallest storage, (mk + kn + mn)/P elements, per rank; plans may
//      leave ranks idle where that is cheaper (sw::AnyMeshOptions::allow_idle): best / bound per
//      cell, and whether every cell is within 1.1 of the bound.
// Then every row of table 1's plan for P = 64 runs on a virtual cluster of 64 threads at a small
// size, and each rank's channel bytes (what the virtual cluster counted it sending) must equal
// the model for that rank; each rank's block of C is checked against serial Eigen. Exit status 1
// if any differs.
//
//   build-bench/benchmarks/scaling_model [--markdown FILE]      (benchmarks/run runs it)
#include <Eigen/Core>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "shardwise/comm/virtual_cluster.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/kernels/permute.hpp"
#include "shardwise/plan/describe.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/sharding_planner.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace {

namespace sw = shardwise;
using sw::detail::axis_list;
using sw::detail::block_geometry;
using sw::detail::tensor_axes;
using sw::detail::VariantKind;

constexpr std::int64_t budget = std::int64_t{4} << 30;
constexpr std::string_view axis_names[] = {"x", "y", "z"};

block_geometry mesh_of(const std::vector<int>& extents) {
  block_geometry g;
  for (int e : extents) g.extents[static_cast<std::size_t>(g.ndim++)] = e;
  return g;
}

std::string mesh_text(const block_geometry& g) {
  std::string s;
  for (int a = 0; a < g.ndim; ++a) s += (a ? " x " : "") + std::to_string(g.extents[static_cast<std::size_t>(a)]);
  return s;
}

std::string axes_text(const tensor_axes& t) {
  std::string s = "[";
  for (int d = 0; d < t.rank; ++d) s += (d ? ", " : "") + sw::detail::axes_text_of(t.dim(d), axis_names);
  return s + "]";
}

std::string variant_text(const sw::MatmulChoice& c) {
  switch (c.variant) {
    case VariantKind::standard: return "standard";
    case VariantKind::ring: return "ring";
    case VariantKind::summa: return "SUMMA";
    case VariantKind::summa_25d: return "2.5D over " + sw::detail::axes_text_of(c.layers, axis_names);
  }
  return "?";
}

std::string plan_text(const sw::MatmulChoice& c) {
  return "A" + axes_text(c.a) + " B" + axes_text(c.b) + " C" + axes_text(c.c) + ", kernel A" + axes_text(c.kernel_a) +
         " B" + axes_text(c.kernel_b) + ", " + variant_text(c);
}

tensor_axes matrix(axis_list rows, axis_list cols) {
  tensor_axes t;
  t.rank = 2;
  t.dim(0) = rows;
  t.dim(1) = cols;
  return t;
}

struct Row {
  std::int64_t n = 0;
  int p = 0;
  sw::MatmulChoice best, summa, layered;
  block_geometry best_mesh, summa_mesh, layered_mesh;
  int layers = 0;
  double bound_bytes = 0;
};

/// 2-D SUMMA on the squarest grid of P ranks.
sw::MatmulChoice summa_2d(int p, const sw::MatmulProblem& problem, block_geometry& mesh) {
  int q = 1;
  for (int a = 1; a * a <= p; ++a)
    if (p % a == 0) q = a;
  mesh = mesh_of({p / q, q});
  const tensor_axes blocks = matrix({0}, {1});
  return sw::detail::evaluate_matmul(mesh, problem, blocks, blocks, blocks, blocks, blocks, VariantKind::summa, {}).choice;
}

/// 2.5D on q x q x c from operands stored once, for the c (at least 2) with the fewest bytes that fits.
sw::MatmulChoice summa_25d(int p, const sw::MatmulProblem& problem, block_geometry& mesh, int& layers) {
  sw::MatmulChoice best;
  for (int c = 2; c <= p; ++c) {
    if (p % c != 0) continue;
    const int q = static_cast<int>(std::lround(std::sqrt(static_cast<double>(p / c))));
    if (q < 2 || q * q * c != p) continue;
    const block_geometry g = mesh_of({q, q, c});
    const tensor_axes kernel = matrix({0}, {1});
    const auto e = sw::detail::evaluate_matmul(g, problem, matrix({0}, {1, 2}), matrix({0, 2}, {1}), kernel, kernel,
                                               matrix({0}, {1, 2}), VariantKind::summa_25d, {2});
    if (e.fits && (!best.found || sw::detail::cheaper(e.choice, best))) {
      best = e.choice;
      mesh = g;
      layers = c;
    }
  }
  return best;
}

double mib(std::int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// ---- the check on 64 virtual ranks ---------------------------------------------------------------

using Cube = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>, sw::Axis<"y", sw::dynamic_extent>,
                      sw::Axis<"z", sw::dynamic_extent>>;

/// This rank's block of a column-major global matrix, row-major.
std::vector<double> block_of(const Eigen::MatrixXd& global, const tensor_axes& t, const block_geometry& geo) {
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows = global;
  const sw::detail::tensor_extents whole{global.rows(), global.cols()};
  const sw::detail::tensor_extents offsets{geo.offset(global.rows(), t.dim(0)), geo.offset(global.cols(), t.dim(1))};
  const sw::detail::tensor_extents local = sw::detail::local_extents(t, whole, geo);
  std::vector<double> block(static_cast<std::size_t>(local[0] * local[1]));
  sw::detail::copy_box(rows.data(), block.data(), whole, offsets, local, 2, true);
  return block;
}

/// Runs `choice` (planned for `mesh`) on a virtual cluster at m = n = k = `size`; whether every
/// rank's channel bytes equal its model and its block of C is right.
bool check_on_virtual_cluster(const sw::MatmulChoice& choice, const block_geometry& mesh, std::int64_t size,
                              double& worst_error) {
  std::vector<int> extents(3, 1);
  for (int a = 0; a < mesh.ndim; ++a) extents[static_cast<std::size_t>(a)] = mesh.extents[static_cast<std::size_t>(a)];
  const Cube cube{extents[0], extents[1], extents[2]};
  const Eigen::MatrixXd a = Eigen::MatrixXd::Random(size, size), b = Eigen::MatrixXd::Random(size, size);
  const Eigen::MatrixXd c = a * b;
  const sw::detail::operand_extents global = sw::detail::matmul_extents({.m = size, .k = size, .n = size});
  const auto& plan = choice.plan;
  const auto row_major = sw::detail::dim_order::row_major(2);
  const sw::detail::program program =
      sw::detail::lower(plan.steps, plan.start, sw::detail::matmul_indices, choice.panel_width, row_major, row_major,
                        {}, row_major);
  sw::VirtualCluster cluster(cube.size());
  std::vector<sw::Traffic> modeled(static_cast<std::size_t>(cube.size()));
  std::vector<double> errors(static_cast<std::size_t>(cube.size()));
  cluster.run([&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    sw::ProcessGroupMesh<Cube> groups(std::move(comm), cube);
    const block_geometry geo = groups.geometry();
    const auto a_block = block_of(a, plan.start[sw::Operand::A], geo);
    const auto b_block = block_of(b, plan.start[sw::Operand::B], geo);
    const auto want = block_of(c, choice.c, geo);
    std::vector<double> out(want.size());
    sw::detail::executor<double, true>(program, groups.state(), global, {a_block.data(), b_block.data(), nullptr, out.data()})
        .run();
    modeled[static_cast<std::size_t>(rank)] =
        sw::detail::schedule_traffic(plan.steps, plan.start, global, geo, sizeof(double), choice.panel_width);
    double e = 0;
    for (std::size_t i = 0; i < out.size(); ++i) e = std::max(e, std::abs(out[i] - want[i]));
    errors[static_cast<std::size_t>(rank)] = e;
  });
  bool equal = true;
  worst_error = 0;
  for (int r = 0; r < cube.size(); ++r) {
    equal = equal && cluster.sent_by(r) == modeled[static_cast<std::size_t>(r)];
    worst_error = std::max(worst_error, errors[static_cast<std::size_t>(r)]);
  }
  return equal;
}

}  // namespace

int main(int argc, char** argv) {
  std::string markdown_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--markdown") == 0 && i + 1 < argc) {
      markdown_path = argv[++i];
    } else {
      std::fprintf(stderr, "scaling_model: unknown argument '%s'; use --markdown FILE\n", argv[i]);
      return 2;
    }
  }
  std::vector<Row> rows;
  for (const std::int64_t n : {std::int64_t{4096}, std::int64_t{32768}})
    for (const int p : {8, 64, 512, 4096}) {
      Row row;
      row.n = n;
      row.p = p;
      const sw::MatmulProblem problem{{.m = n, .k = n, .n = n}, sizeof(double), budget};
      const sw::MeshedMatmulChoice best = sw::plan_matmul_any_mesh(p, problem);
      row.best = best.choice;
      row.best_mesh = best.mesh;
      row.summa = summa_2d(p, problem, row.summa_mesh);
      row.layered = summa_25d(p, problem, row.layered_mesh, row.layers);
      row.bound_bytes = 8.0 * sw::matmul_lower_bound(n, n, n, p).words;
      rows.push_back(row);
    }

  std::ostringstream out;
  out << "| n | P | best plan: mesh, shardings, variant | best MiB/rank | its footprint | 2-D SUMMA (grid) MiB/rank "
         "| 2.5D best c (q x q x c) MiB/rank | lower bound MiB/rank | best / bound | SUMMA / bound | 2.5D / bound |\n"
      << "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  char line[1024];
  for (const Row& r : rows) {
    auto cell = [&](const sw::MatmulChoice& c, const block_geometry& g) {
      std::snprintf(line, sizeof line, "%.1f (%s)%s", mib(c.traffic.bytes), mesh_text(g).c_str(),
                    c.footprint_bytes > budget ? " over budget" : "");
      return std::string(line);
    };
    auto ratio = [&](const sw::MatmulChoice& c) {
      std::snprintf(line, sizeof line, "%.3f", static_cast<double>(c.traffic.bytes) / r.bound_bytes);
      return std::string(line);
    };
    std::snprintf(line, sizeof line, "| %lld | %d | %s: %s | %.1f | %.0f MiB | ", static_cast<long long>(r.n), r.p,
                  mesh_text(r.best_mesh).c_str(), plan_text(r.best).c_str(), mib(r.best.traffic.bytes),
                  mib(r.best.footprint_bytes));
    out << line << cell(r.summa, r.summa_mesh) << " | "
        << (r.layered.found ? cell(r.layered, r.layered_mesh) + ", c = " + std::to_string(r.layers) : std::string("none fits"))
        << " | ";
    std::snprintf(line, sizeof line, "%.1f", r.bound_bytes / (1 << 20));
    out << line << " | " << ratio(r.best) << " | " << ratio(r.summa) << " | "
        << (r.layered.found ? ratio(r.layered) : std::string("-")) << " |\n";
  }

  // Table 2: shapes x P, best / bound, with 4 GiB and with three times the smallest storage.
  struct Shape {
    const char* name;
    sw::MatmulShape shape;
  };
  const Shape shapes[] = {{"square 16384^3", {.m = 16384, .k = 16384, .n = 16384}},
                          {"tall-skinny 2^20 x 2^10 x 2^10", {.m = 1 << 20, .k = 1 << 10, .n = 1 << 10}},
                          {"large-k 2^10 x 2^20 x 2^10", {.m = 1 << 10, .k = 1 << 20, .n = 1 << 10}},
                          {"flat 2^15 x 2^10 x 2^15", {.m = 1 << 15, .k = 1 << 10, .n = 1 << 15}}};
  const int ranks[] = {6, 7, 8, 12, 27, 64, 100, 127, 512, 1000, 4096};
  double worst_ratio = 0;
  std::string worst_cell;
  for (const bool tight : {false, true}) {
    out << "\n" << (tight ? "With three times the smallest storage per rank, 3 (mk + kn + mn)/P elements"
                           : "With 4 GiB per rank")
        << ": the planner's best over every mesh of up to three axes (idle ranks allowed), its busiest rank's "
           "bytes over the lower bound for P ranks, and its mesh.\n\n| P |";
    for (const Shape& s : shapes) out << " " << s.name << " |";
    out << "\n|---:|";
    for (std::size_t i = 0; i < std::size(shapes); ++i) out << "---|";
    out << "\n";
    for (const int p : ranks) {
      out << "| " << p << " |";
      for (const Shape& s : shapes) {
        const sw::MatmulShape& x = s.shape;
        const std::int64_t budget_here =
            tight ? 3 * 8 * ((x.m * x.k + x.k * x.n + x.m * x.n) / p + 1) : budget;
        const sw::MeshedMatmulChoice best =
            sw::plan_matmul_any_mesh(p, {x, sizeof(double), budget_here}, {.allow_idle = true});
        const double bound = 8.0 * sw::matmul_lower_bound(x.m, x.k, x.n, p).words;
        if (!best.choice.found) {
          out << " none fits |";
          continue;
        }
        const double ratio = static_cast<double>(best.choice.traffic.bytes) / bound;
        std::snprintf(line, sizeof line, " %.3f (%s%s) |", ratio, mesh_text(best.mesh).c_str(),
                      best.idle_ranks() > 0 ? (", " + std::to_string(best.idle_ranks()) + " idle").c_str() : "");
        out << line;
        if (ratio > worst_ratio) {
          worst_ratio = ratio;
          worst_cell = std::string(s.name) + " on " + std::to_string(p) + (tight ? " ranks, tight budget" : " ranks");
        }
      }
      out << "\n";
    }
  }
  std::snprintf(line, sizeof line, "%.3f", worst_ratio);
  out << "\nGoal, best plan <= 1.1 x the lower bound for every P and shape: "
      << (worst_ratio <= 1.1 ? "met" : "not met") << " (largest ratio " << line << ": " << worst_cell << ").\n";

  // Every P = 64 row's plans, run on 64 virtual ranks at a small size.
  bool all_equal = true;
  out << "\nEach P = 64 plan above, run on a virtual cluster of 64 threads at m = n = k = 96: every rank's "
         "channel bytes against its model, and its block of C against serial Eigen.\n\n"
      << "| row | plan | mesh | channel bytes == model on all 64 ranks | max abs error |\n|---|---|---|---|---:|\n";
  for (const Row& r : rows) {
    if (r.p != 64) continue;
    const std::pair<const char*, std::pair<const sw::MatmulChoice*, const block_geometry*>> plans[] = {
        {"best", {&r.best, &r.best_mesh}}, {"2-D SUMMA", {&r.summa, &r.summa_mesh}}, {"2.5D", {&r.layered, &r.layered_mesh}}};
    for (const auto& [name, plan] : plans) {
      if (!plan.first->plan.error.ok() || plan.first->plan.steps.empty()) continue;
      double error = 0;
      const bool equal = check_on_virtual_cluster(*plan.first, *plan.second, 96, error);
      all_equal = all_equal && equal && error < 1e-12;
      std::snprintf(line, sizeof line, "| n = %lld, %s | %s | %s | %s | %.1e |\n", static_cast<long long>(r.n), name,
                    plan_text(*plan.first).c_str(), mesh_text(*plan.second).c_str(), equal ? "yes" : "NO", error);
      out << line;
    }
  }
  std::fputs(out.str().c_str(), stdout);
  if (!markdown_path.empty()) std::ofstream(markdown_path) << out.str();
  return all_equal ? 0 : 1;
}
