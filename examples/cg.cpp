// Conjugate gradients on a dense symmetric positive definite system A x = b, without leaving
// the library: the vector updates are sw::axpy / sw::scale, the dot products sw::dot, the
// product sw::matvec, and every byte that moves is a step of a plan, so each iteration's
// counted traffic is checked against the plans' model on every rank.
//
//   mpiexec -n 4 cg [n]        (any number of ranks; default n = 203)
//   cg --virtual [n]           (the same program, 4 threads in one process)
//
// Two layouts, solved one after the other:
//   rows   A[(x,y), -]: rows over all P ranks, the vectors [(x,y)]. p is gathered (AllGather)
//          for the product, which is then local; the two dot products are an AllReduce of one
//          scalar each.
//   grid   A[x, y], the vectors [x] (replicated over y), P even. p is gathered to replicated,
//          and the product's plan slices it to [y] (no bytes) instead of gathering A, then
//          reduces over y.
// Both on one mesh x * y: 2 x P/2 for P even, P x 1 otherwise.
// A is generated from global indices on every rank (no random numbers): A_ij = 1 / (1 + (i-j)^2)
// off the diagonal, A_ii = 3 + 8 i / n, symmetric and strictly diagonally dominant, hence SPD.
// The answer is checked against Eigen's LLT solve of the same system.
#include <mpi.h>

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <shardwise/comm/virtual_cluster.hpp>  // --virtual: the same program on threads
#include <shardwise/tensor.hpp>

namespace sw = shardwise;

namespace {

using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;
using Grid = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>, sw::Axis<"y", sw::dynamic_extent>>;
using Whole = TS<R>;  // p, gathered for the product
using Matrix = Eigen::Tensor<double, 2, Eigen::RowMajor>;
using Column = Eigen::Tensor<double, 1, Eigen::RowMajor>;

constexpr double relative_tolerance = 1e-12;  // on |r| / |b|
constexpr double error_limit = 1e-9;          // on max |x - x_LLT| / max |x_LLT|
constexpr int max_iterations = 500;

double a_entry(Eigen::Index i, Eigen::Index j, Eigen::Index n) {
  if (i == j) return 3.0 + 8.0 * static_cast<double>(i) / static_cast<double>(n);
  const double d = static_cast<double>(i - j);
  return 1.0 / (1.0 + d * d);
}
double b_entry(Eigen::Index i) { return std::sin(0.1 * static_cast<double>(i) + 1.0); }

/// One layout's outcome on this rank.
struct Outcome {
  int iterations = 0;
  double residual = 0, error = 0;
  sw::Traffic counted_per_iteration, modeled_per_iteration;
  bool every_iteration_matched = true;
  std::vector<std::string> plans;
};

/// CG on mesh M with A sharded as ShA and the vectors as Vector.
template <typename ShA, typename Vector, typename M>
Outcome solve(sw::ProcessGroupMesh<M>& groups, const sw::CommCounters& counters, Eigen::Index n) {
  Matrix a_global(n, n);
  Column b_global(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    b_global(i) = b_entry(i);
    for (Eigen::Index j = 0; j < n; ++j) a_global(i, j) = a_entry(i, j, n);
  }
  const auto a = sw::ShardedTensor<double, M, ShA>::distribute(groups, a_global);
  const auto b = sw::ShardedTensor<double, M, Vector>::distribute(groups, b_global);

  // The plans of one iteration, and their model for this rank.
  using Gather = sw::reshard_plan<M, Vector, Whole>;
  using Product = sw::matvec_plan<M, ShA, Whole>;
  using Dot = sw::dot_plan<M, Vector, Vector>;
  static_assert(std::is_same_v<typename Product::output_sharding, Vector>,
                "A p comes out split like the vectors, so the updates are local");
  const auto at = groups.coordinate();
  Outcome out;
  out.modeled_per_iteration = Gather::traffic(groups.mesh(), at, {n}, sizeof(double)) +
                              Product::traffic(groups.mesh(), at, {{'i', n}, {'j', n}}, sizeof(double)) +
                              Dot::traffic(groups.mesh(), at, {{'i', n}}, sizeof(double)) +
                              Dot::traffic(groups.mesh(), at, {{'i', n}}, sizeof(double));
  out.plans = {"gather p:  " + Gather::describe(), "A p:       " + Product::describe(),
               "p.q, r.r:  " + Dot::describe()};

  sw::ShardedTensor<double, M, Vector> x(groups, {n});  // x = 0, so r = b
  auto r = b;
  auto p = r;
  double rr = sw::dot(r, r);
  const double b_norm = sw::norm(b);
  for (out.iterations = 1; out.iterations <= max_iterations; ++out.iterations) {
    const sw::Traffic before = counters.total();
    const auto q = sw::matvec(a, sw::reshard<Whole>(p));
    const double alpha = rr / sw::dot(p, q);
    sw::axpy(alpha, p, x);
    sw::axpy(-alpha, q, r);
    const double rr_next = sw::dot(r, r);
    const sw::Traffic sent = counters.total() - before;
    out.counted_per_iteration = sent;
    out.every_iteration_matched = out.every_iteration_matched && sent == out.modeled_per_iteration;
    if (std::sqrt(rr_next) <= relative_tolerance * b_norm) break;
    sw::scale(rr_next / rr, p);  // p = r + (rr_next / rr) p
    sw::axpy(1.0, r, p);
    rr = rr_next;
  }

  // The true residual b - A x, and the error against Eigen's Cholesky solve.
  auto residual = b;
  sw::axpy(-1.0, sw::matvec(a, sw::reshard<Whole>(x)), residual);
  out.residual = sw::norm(residual) / b_norm;
  const Column x_global = x.to_global();
  const Eigen::MatrixXd dense = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
      a_global.data(), n, n);
  const Eigen::VectorXd reference = dense.llt().solve(Eigen::Map<const Eigen::VectorXd>(b_global.data(), n));
  double worst = 0;
  for (Eigen::Index i = 0; i < n; ++i) worst = std::max(worst, std::abs(x_global(i) - reference(i)));
  out.error = worst / reference.cwiseAbs().maxCoeff();
  return out;
}

/// Prints one layout's outcome (rank 0) and returns whether it passed (every rank). Each rank's
/// numbers are one row of a [P, 5] tensor split by rows, gathered by the library too.
template <typename M>
bool report(sw::ProcessGroupMesh<M>& groups, const char* layout, const Outcome& o, Eigen::Index n) {
  using Ledger = sw::ShardedTensor<double, M, TS<S<"x", "y">, R>>;
  const Eigen::Index ranks = groups.mesh().size();
  typename Ledger::local_tensor mine(1, 5);
  mine.setValues({{static_cast<double>(o.counted_per_iteration.bytes),
                   static_cast<double>(o.counted_per_iteration.messages),
                   static_cast<double>(o.modeled_per_iteration.bytes),
                   static_cast<double>(o.modeled_per_iteration.messages), o.every_iteration_matched ? 1.0 : 0.0}});
  const Matrix all = Ledger::from_local(groups, {ranks, 5}, std::move(mine)).to_global();
  bool match = true;
  for (Eigen::Index r = 0; r < ranks; ++r) match = match && all(r, 4) == 1.0;
  const bool accurate = o.error <= error_limit && o.residual <= 10 * relative_tolerance;
  if (groups.rank() == 0) {
    std::printf("cg %s: n=%lld on mesh x=%d, y=%d, %d iterations, relative residual %.3e, error vs Eigen LLT "
                "%.3e%s\n", layout, static_cast<long long>(n), groups.mesh().extent(0), groups.mesh().extent(1),
                o.iterations, o.residual, o.error, accurate ? "" : "  TOO LARGE");
    for (const std::string& line : o.plans) std::printf("  %s\n", line.c_str());
    for (Eigen::Index r = 0; r < ranks; ++r)
      std::printf("  rank %lld: per iteration counted_bytes=%.0f (%.0f msgs) modeled_bytes=%.0f (%.0f msgs)\n",
                  static_cast<long long>(r), all(r, 0), all(r, 1), all(r, 2), all(r, 3));
    std::printf("  every rank, every iteration: counted %s modeled\n", match ? "==" : "!= (MISMATCH)");
  }
  return accurate && match;
}

/// Both layouts on this rank; `comm` spans every rank (MPI or the virtual cluster).
int run(sw::AnyCommunicator comm, Eigen::Index n) {
  auto counters = std::make_shared<sw::CommCounters>();
  const int size = comm.size();
  const Grid mesh = size % 2 == 0 ? Grid{2, size / 2} : Grid{size, 1};
  sw::ProcessGroupMesh<Grid> groups(sw::CountingCommunicator<sw::AnyCommunicator>(std::move(comm), counters), mesh);
  bool ok = report(groups, "rows", solve<TS<S<"x", "y">, R>, TS<S<"x", "y">>>(groups, *counters, n), n);
  if (size % 2 == 0)
    ok = report(groups, "grid", solve<TS<S<"x">, S<"y">>, TS<S<"x">>>(groups, *counters, n), n) && ok;
  else if (groups.rank() == 0)
    std::printf("cg grid: skipped (an odd number of ranks makes no 2 x P/2 mesh)\n");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool on_threads = false;
  Eigen::Index n = 203;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--virtual") == 0) {
      on_threads = true;
    } else if (const long long value = std::atoll(argv[i]); value > 0) {
      n = static_cast<Eigen::Index>(value);
    } else {
      std::fprintf(stderr, "cg: unknown argument '%s'; use [--virtual] [n]\n", argv[i]);
      return 2;
    }
  }
  // The model is the solver's own traffic: the library's agreement checks (one small
  // all-reduce per call) stay out of the count. Set before any rank runs.
  sw::check_level() = sw::CheckLevel::local;
  if (on_threads) {
    int status = 0;
    sw::run_virtual_cluster(4, [&](sw::VirtualCommunicator& comm) {
      const int rank = comm.rank();
      const int result = run(sw::AnyCommunicator(std::move(comm)), n);
      if (rank == 0) status = result;
    });
    return status;
  }
  // An exception on any rank ends every rank with its message (MPI_Abort): no rank waits forever.
  sw::MpiEnvironment mpi(argc, argv);
  return run(sw::AnyCommunicator(sw::MpiCommunicator(MPI_COMM_WORLD)), n);
}
