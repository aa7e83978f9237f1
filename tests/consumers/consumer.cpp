// What a numerical code does first with shardwise, built as a consumer would build it
// (Meson subproject, pkg-config, CMake find_package, FetchContent or add_subdirectory):
// C = A * B on 2 MPI ranks, compared with serial Eigen. Prints OK on rank 0; exits
// non-zero on a mismatch. Also prints how it was built, which tests/consumers/run.sh checks:
// "run-time part: compiled once" (SHARDWISE_SEPARATE_COMPILATION, as the default targets
// build it with the companion library) or "run-time part: header-only".
#include <mpi.h>

#include <cmath>
#include <cstdio>

#include <shardwise/shardwise.hpp>

namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"p", 2>>;
using ColumnsSplit = sw::TensorSharding<sw::Replicated, sw::Split<"p">>;  // A[m, k]: k over p
using RowsSplit = sw::TensorSharding<sw::Split<"p">, sw::Replicated>;     // B[k, n]: k over p
using Replicated = sw::replicated_sharding_t<2>;
#ifdef SHARDWISE_SEPARATE_COMPILATION
constexpr const char* run_time_part = "compiled once";
#else
constexpr const char* run_time_part = "header-only";
#endif

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  double error = 1.0;
  {
    sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD);  // throws unless there are 2 ranks
    // The same matrices on every rank, without a random number generator.
    const Eigen::MatrixXd a = Eigen::MatrixXd::NullaryExpr(7, 5, [](Eigen::Index i, Eigen::Index j) {
      return std::sin(1.0 + static_cast<double>(i + 7 * j));
    });
    const Eigen::MatrixXd b = Eigen::MatrixXd::NullaryExpr(5, 3, [](Eigen::Index i, Eigen::Index j) {
      return std::cos(2.0 + static_cast<double>(3 * i + j));
    });
    const auto sa = sw::ShardedMatrix<double, Line, ColumnsSplit>::distribute(groups, a);
    const auto sb = sw::ShardedMatrix<double, Line, RowsSplit>::distribute(groups, b);
    const auto c = sw::matmul<Replicated>(sa, sb);  // local GEMM, then AllReduce over p
    error = (c.local() - a * b).cwiseAbs().maxCoeff();
    MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (groups.rank() == 0)
      std::printf("%s\nmax |C - A*B| over both ranks = %.1e: %s\nrun-time part: %s\n",
                  sw::matmul_plan<Line, ColumnsSplit, RowsSplit, Replicated>::describe().c_str(), error,
                  error < 1e-12 ? "OK" : "MISMATCH", run_time_part);
  }
  MPI_Finalize();
  return error < 1e-12 ? 0 : 1;
}
