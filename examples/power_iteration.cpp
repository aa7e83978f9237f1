// Power iteration on a distributed symmetric matrix: the largest eigenvalue of the
// Gaussian kernel matrix K[i][j] = exp(-|p_i - p_j|^2 / (2 w^2)) of n random points p in
// the unit square, the first step of kernel PCA and of spectral methods.
//
//   mpiexec -n 4 power_iteration [n]      (default n = 2000; any number of ranks)
//
// Layout: each rank builds and holds only its block of columns of K, and the vector x is
// split by rows over the same axis. y = K x is then a local GEMM on each rank's blocks
// followed by a ReduceScatter that leaves y split exactly like x: no vector is ever
// gathered, and K never moves. The Rayleigh quotient, the norm and the residual are sums
// of local dot products (a few doubles all-reduced per iteration). Rank 0 also builds the
// whole K once, only to check the result against Eigen's SelfAdjointEigenSolver.
#include <mpi.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <type_traits>

#include <shardwise/shardwise.hpp>

namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"p", sw::dynamic_extent>>;             // as many ranks as launched
using ByColumns = sw::TensorSharding<sw::Replicated, sw::Split<"p">>;  // K[n, n]: columns over p
using ByRows = sw::TensorSharding<sw::Split<"p">, sw::Replicated>;     // x[n, 1]: rows over p
// y = K x with y requested split like x: K's columns and x's rows share p, so the local
// GEMMs leave partial sums of y, and a ReduceScatter over p both adds and splits them.
using Product = sw::matmul_plan<Line, ByColumns, ByRows, ByRows>;
static_assert(std::is_same_v<Product::policy, sw::policy::MatchedInner>);

constexpr double kernel_width = 0.25;
constexpr double tolerance = 1e-10;  // on |K x - lambda x| / lambda
constexpr int max_iterations = 500;

// The same n points on every rank: same generator, same seed.
Eigen::Matrix2Xd random_points(Eigen::Index n) {
  std::mt19937_64 engine(2024);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  return Eigen::Matrix2Xd::NullaryExpr(2, n, [&] { return uniform(engine); });
}

// Column block [first, first + cols) of K.
Eigen::MatrixXd kernel_columns(const Eigen::Matrix2Xd& points, Eigen::Index first, Eigen::Index cols) {
  return Eigen::MatrixXd::NullaryExpr(points.cols(), cols, [&](Eigen::Index i, Eigen::Index j) {
    const double squared_distance = (points.col(i) - points.col(first + j)).squaredNorm();
    return std::exp(-squared_distance / (2 * kernel_width * kernel_width));
  });
}

int main(int argc, char** argv) {
  // An exception on any rank ends every rank with its message (MPI_Abort), rather than leaving
  // the others waiting in a collective.
  sw::MpiEnvironment mpi(argc, argv);
  int status = 0;
  {
    int ranks = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const Eigen::Index n = argc > 1 ? std::atol(argv[1]) : 2000;
    sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line(ranks));
    const bool root = groups.rank() == 0;
    const Eigen::Matrix2Xd points = random_points(n);

    sw::ShardedMatrix<double, Line, ByColumns> k(groups, n, n);
    k.local() = kernel_columns(points, k.col_offset(), k.local_cols());

    double reference = 0.0;  // on rank 0 only
    if (root) {
      const Eigen::MatrixXd whole = kernel_columns(points, 0, n);
      reference = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(whole, Eigen::EigenvaluesOnly).eigenvalues()(n - 1);
      const sw::Traffic per_product = Product::max_traffic(groups.mesh(), {.m = n, .k = n, .n = 1}, sizeof(double));
      std::printf("power iteration: largest eigenvalue of a %ld x %ld Gaussian kernel matrix on %d MPI ranks\n"
                  "K split by columns over p, x and y by rows over p\n"
                  "y = K x   %s\n"
                  "          (the busiest rank sends %lld bytes per product; K never moves)\n\n"
                  "  iter  eigenvalue estimate  residual   error vs Eigen   (residual: |K x - lambda x| / lambda)\n",
                  static_cast<long>(n), static_cast<long>(n), ranks, Product::describe().c_str(),
                  static_cast<long long>(per_product.bytes));
    }

    // Start from the unit vector of equal entries: K's entries are positive, so its
    // dominant eigenvector has positive entries and is not orthogonal to it.
    sw::ShardedMatrix<double, Line, ByRows> x(groups, n, 1), y(groups, n, 1);
    x.local().setConstant(1.0 / std::sqrt(static_cast<double>(n)));
    double lambda = 0.0, residual = 0.0;
    int iteration = 0;
    while (iteration < max_iterations) {
      ++iteration;
      sw::matmul_into(y, k, x);  // y = K x, split like x
      double sums[2] = {x.local().col(0).dot(y.local().col(0)), y.local().squaredNorm()};
      groups.world().all_reduce(sums);
      lambda = sums[0];  // Rayleigh quotient x'Kx, as |x| = 1
      double squared_residual = (y.local() - lambda * x.local()).squaredNorm();
      groups.world().all_reduce(std::span<double>(&squared_residual, 1));
      residual = std::sqrt(squared_residual) / lambda;
      x.local() = y.local() / std::sqrt(sums[1]);
      if (root)
        std::printf("  %4d  %-19.15g  %.3e  %.3e\n", iteration, lambda, residual,
                    std::abs(lambda - reference) / reference);
      if (residual < tolerance) break;
    }

    if (root) {
      const double error = std::abs(lambda - reference) / reference;
      const bool ok = residual < tolerance && error < 1e-12;
      std::printf("\n%s after %d iterations: lambda = %.15g\n"
                  "Eigen's SelfAdjointEigenSolver on the whole matrix: %.15g\n"
                  "relative error %.1e: %s\n",
                  residual < tolerance ? "converged" : "NOT converged", iteration, lambda, reference, error,
                  ok ? "OK" : "FAILED");
      status = ok ? 0 : 1;
    }
  }
  return status;
}
