// Power iteration on a distributed symmetric matrix: the largest eigenvalue of the Gaussian
// kernel matrix K[i][j] = exp(-|p_i - p_j|^2 / (2 w^2)) of n random points p in the unit
// square, the first step of kernel PCA and of spectral methods. Written as a numerical code
// would, without leaving the library: K is generated block by block from its formula
// (sw::ShardedTensor::generate: each rank computes only its own entries), the product is
// sw::matvec, the Rayleigh quotient sw::dot, the norms sw::norm, the update sw::scale and
// sw::axpy. Every byte that moves is a step of a plan, so each iteration's counted traffic is
// checked against the plans' model on every rank.
//
//   mpiexec -n 4 power_iteration [n]      (any number of ranks; default n = 2000)
//   power_iteration --virtual [n]         (the same program, 4 threads in one process)
//
// Two layouts, one after the other, on one mesh x * y (2 x P/2 for P even, P x 1 otherwise):
//   columns  K[-, (x,y)]: columns over all P ranks, the vectors [(x,y)] split like them. The
//            product's local GEMVs leave partial sums of y, and it is requested split like x,
//            so a ReduceScatter both adds and splits them: no vector is gathered, K never moves.
//   grid     K[x, y], the vectors [x] (replicated over y), P even. x is gathered to replicated;
//            the product slices it to [y] (no bytes) instead of gathering K, then reduces over y.
// Rank 0 also builds the whole of K once, only to check the result against Eigen's
// SelfAdjointEigenSolver.
#include <mpi.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
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

constexpr double kernel_width = 0.25;
constexpr double tolerance = 1e-10;    // on |K x - lambda x| / lambda
constexpr double error_limit = 1e-12;  // on |lambda - lambda_Eigen| / lambda_Eigen
constexpr int max_iterations = 500;

/// The same n points on every rank: same generator, same seed.
Eigen::Matrix2Xd random_points(Eigen::Index n) {
  std::mt19937_64 engine(2024);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  return Eigen::Matrix2Xd::NullaryExpr(2, n, [&] { return uniform(engine); });
}

/// K's entry (i, j).
double kernel(const Eigen::Matrix2Xd& points, std::int64_t i, std::int64_t j) {
  const double squared_distance = (points.col(i) - points.col(j)).squaredNorm();
  return std::exp(-squared_distance / (2 * kernel_width * kernel_width));
}

/// One layout's outcome on this rank.
struct Outcome {
  int iterations = 0;
  double lambda = 0, residual = 0;
  sw::Traffic counted_per_iteration, modeled_per_iteration;
  bool every_iteration_matched = true;
  std::vector<std::string> plans;
};

/// Power iteration on mesh M with K sharded as ShK and the vectors as Vector; `Gathered` is the
/// sharding x takes for the product (Vector itself when nothing needs gathering).
template <typename ShK, typename Vector, typename Gathered, typename M>
Outcome iterate(sw::ProcessGroupMesh<M>& groups, const sw::CommCounters& counters, const Eigen::Matrix2Xd& points) {
  const std::int64_t n = points.cols();
  const auto k = sw::ShardedTensor<double, M, ShK>::generate(
      groups, {n, n}, [&](std::int64_t i, std::int64_t j) { return kernel(points, i, j); });

  // The plans of one iteration, and their model for this rank.
  using Gather = sw::reshard_plan<M, Vector, Gathered>;
  using Product = sw::matvec_plan<M, ShK, Gathered, Vector>;
  using Dot = sw::dot_plan<M, Vector, Vector>;
  using Norm = sw::norm_plan<M, Vector>;
  const auto at = groups.coordinate();
  const sw::IndexExtents vector_extents{{'i', n}};
  Outcome out;
  const sw::Traffic norm = Norm::traffic(groups.mesh(), at, vector_extents, sizeof(double));
  out.modeled_per_iteration = Gather::traffic(groups.mesh(), at, {n}, sizeof(double)) +
                              Product::traffic(groups.mesh(), at, {{'i', n}, {'j', n}}, sizeof(double)) +
                              Dot::traffic(groups.mesh(), at, vector_extents, sizeof(double)) + norm + norm;
  if constexpr (!std::is_same_v<Vector, Gathered>) out.plans.push_back("gather x:   " + Gather::describe());
  out.plans.push_back("y = K x:    " + Product::describe());
  out.plans.push_back("x.y:        " + Dot::describe());
  out.plans.push_back("|r|, |y|:   " + Norm::describe());

  // Start from the unit vector of equal entries: K's entries are positive, so its dominant
  // eigenvector has positive entries and is not orthogonal to it.
  auto x = sw::ShardedTensor<double, M, Vector>::generate(
      groups, {n}, [n](std::int64_t) { return 1.0 / std::sqrt(static_cast<double>(n)); });
  for (out.iterations = 1; out.iterations <= max_iterations; ++out.iterations) {
    const sw::Traffic before = counters.total();
    auto y = [&] {
      if constexpr (std::is_same_v<Vector, Gathered>) return sw::matvec<Vector>(k, x);
      else return sw::matvec<Vector>(k, sw::reshard<Gathered>(x));
    }();
    out.lambda = sw::dot(x, y);  // the Rayleigh quotient x'Kx, as |x| = 1
    auto r = y;                  // r = K x - lambda x
    sw::axpy(-out.lambda, x, r);
    out.residual = sw::norm(r) / out.lambda;
    sw::scale(1.0 / sw::norm(y), y);
    x = std::move(y);
    const sw::Traffic sent = counters.total() - before;
    out.counted_per_iteration = sent;
    out.every_iteration_matched = out.every_iteration_matched && sent == out.modeled_per_iteration;
    if (out.residual < tolerance) break;
  }
  return out;
}

/// Prints one layout's outcome (rank 0) and returns whether it passed: converged, and counted ==
/// modeled on every rank; on rank 0, which holds Eigen's `reference`, also within error_limit of
/// it. Each rank's traffic is one row of a [P, 5] tensor split by rows, gathered by the library too.
template <typename M>
bool report(sw::ProcessGroupMesh<M>& groups, const char* layout, const Outcome& o, double reference) {
  const Eigen::Index ranks = groups.mesh().size();
  const auto ledger = sw::ShardedTensor<double, M, TS<S<"x", "y">, R>>::generate(
      groups, {ranks, 5}, [&](std::int64_t, std::int64_t column) {
        const double mine[5] = {static_cast<double>(o.counted_per_iteration.bytes),
                                static_cast<double>(o.counted_per_iteration.messages),
                                static_cast<double>(o.modeled_per_iteration.bytes),
                                static_cast<double>(o.modeled_per_iteration.messages),
                                o.every_iteration_matched ? 1.0 : 0.0};
        return mine[column];
      });
  const auto all = ledger.to_global();
  bool match = true;
  for (Eigen::Index r = 0; r < ranks; ++r) match = match && all(r, 4) == 1.0;
  const bool root = groups.rank() == 0;
  const double error = root ? std::abs(o.lambda - reference) / reference : 0.0;
  const bool ok = o.residual < tolerance && error < error_limit;
  if (root) {
    std::printf("power iteration %s on mesh x=%d, y=%d: %s after %d iterations, lambda = %.15g, "
                "residual %.3e, error vs Eigen %.1e: %s\n",
                layout, groups.mesh().extent(0), groups.mesh().extent(1),
                o.residual < tolerance ? "converged" : "NOT converged", o.iterations, o.lambda, o.residual, error,
                ok ? "OK" : "FAILED");
    for (const std::string& line : o.plans) std::printf("  %s\n", line.c_str());
    for (Eigen::Index r = 0; r < ranks; ++r)
      std::printf("  rank %lld: per iteration counted_bytes=%.0f (%.0f msgs) modeled_bytes=%.0f (%.0f msgs)\n",
                  static_cast<long long>(r), all(r, 0), all(r, 1), all(r, 2), all(r, 3));
    std::printf("  every rank, every iteration: counted %s modeled\n", match ? "==" : "!= (MISMATCH)");
  }
  return ok && match;
}

/// Both layouts on this rank; `comm` spans every rank (MPI or the virtual cluster).
int run(sw::AnyCommunicator comm, Eigen::Index n) {
  auto counters = std::make_shared<sw::CommCounters>();
  const int size = comm.size();
  const Grid mesh = size % 2 == 0 ? Grid{2, size / 2} : Grid{size, 1};
  sw::ProcessGroupMesh<Grid> groups(sw::CountingCommunicator<sw::AnyCommunicator>(std::move(comm), counters), mesh);
  const Eigen::Matrix2Xd points = random_points(n);

  double reference = 0;  // on rank 0 only: Eigen on the whole matrix
  if (groups.rank() == 0) {
    const Eigen::MatrixXd whole =
        Eigen::MatrixXd::NullaryExpr(n, n, [&](Eigen::Index i, Eigen::Index j) { return kernel(points, i, j); });
    reference = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(whole, Eigen::EigenvaluesOnly).eigenvalues()(n - 1);
    std::printf("largest eigenvalue of a %lld x %lld Gaussian kernel matrix on %d ranks; Eigen: %.15g\n",
                static_cast<long long>(n), static_cast<long long>(n), size, reference);
  }
  using ByRanks = TS<S<"x", "y">>;
  bool ok = report(groups, "columns", iterate<TS<R, S<"x", "y">>, ByRanks, ByRanks>(groups, *counters, points),
                   reference);
  if (size % 2 == 0)
    ok = report(groups, "grid", iterate<TS<S<"x">, S<"y">>, TS<S<"x">>, TS<R>>(groups, *counters, points),
                reference) && ok;
  else if (groups.rank() == 0)
    std::printf("power iteration grid: skipped (an odd number of ranks makes no 2 x P/2 mesh)\n");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool on_threads = false;
  Eigen::Index n = 2000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--virtual") == 0) {
      on_threads = true;
    } else if (const long long value = std::atoll(argv[i]); value > 0) {
      n = static_cast<Eigen::Index>(value);
    } else {
      std::fprintf(stderr, "power_iteration: unknown argument '%s'; use [--virtual] [n]\n", argv[i]);
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
