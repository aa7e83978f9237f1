// Compile-time cost of shardwise to a numerical code (benchmarks/compile_time.sh): real and
// complex GEMMs with alpha and beta into existing matrices, one on an adjoint (BLAS's op 'C'),
// and dot, axpy and norm on vectors, on a 2 x 2 mesh. Compiled once against
// <shardwise/core.hpp> (the default) and once against the everything-include
// (-DSHARDWISE_COMPILE_TIME_FULL: <shardwise/tensor.hpp>, which is shardwise.hpp, with the
// planner and nn/, plus the tensors and linalg this code uses); numerical_baseline.cpp does
// the same work with Eigen and MPI alone.
//
// It also runs (mpiexec -n 4) and checks every result against Eigen: exit status 0 when the
// relative errors are below 1e-12. With -DSHARDWISE_COMPILE_TIME_HEADERS_ONLY it only includes
// the headers (the cost of parsing them, apart from the instantiations).
#include <mpi.h>

#include <Eigen/Core>
#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdio>

#ifdef SHARDWISE_COMPILE_TIME_FULL
#include "shardwise/tensor.hpp"
#else
#include "shardwise/core.hpp"
#endif

namespace sw = shardwise;

#ifdef SHARDWISE_COMPILE_TIME_HEADERS_ONLY
int main() { return 0; }
#else
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
template <sw::fixed_string... N>
using S = sw::Split<N...>;
template <typename... D>
using TS = sw::TensorSharding<D...>;
using Blocks = TS<S<"x">, S<"y">>;            // A, B and C: 2-D blocks, as ScaLAPACK holds them
using TransposedBlocks = TS<S<"y">, S<"x">>;  // Aᴴ, so that adjoint(Aᴴ) has A's sharding
using Vector = TS<S<"x", "y">>;               // vectors over all four ranks

namespace {

double relative(double error, double size) { return size > 0 ? error / size : error; }

/// C = alpha A B + beta C, then C = alpha (Aᴴ)ᴴ B + beta C, then dot, axpy and norm: the largest
/// relative error against Eigen.
template <typename Scalar>
double work(sw::ProcessGroupMesh<Grid>& groups, Scalar alpha, Scalar beta) {
  using Dense = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  using DenseVector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
  const Dense a = Dense::Random(37, 29), b = Dense::Random(29, 23), c0 = Dense::Random(37, 23);
  const Dense ah = a.adjoint();
  const auto sa = sw::ShardedMatrix<Scalar, Grid, Blocks>::distribute(groups, a);
  const auto sah = sw::ShardedMatrix<Scalar, Grid, TransposedBlocks>::distribute(groups, ah);
  const auto sb = sw::ShardedMatrix<Scalar, Grid, Blocks>::distribute(groups, b);
  auto c = sw::ShardedMatrix<Scalar, Grid, Blocks>::distribute(groups, c0);
  sw::gemm(alpha, sa, sb, beta, c);
  sw::gemm(alpha, sw::adjoint(sah), sb, beta, c);
  Dense expected = alpha * a * b + beta * c0;
  expected = alpha * a * b + beta * expected;
  double worst = relative((c.to_global() - expected).norm(), expected.norm());

  const std::int64_t n = 101;
  const DenseVector x = DenseVector::Random(n), y0 = DenseVector::Random(n);
  const auto sx = sw::ShardedTensor<Scalar, Grid, Vector>::generate(groups, {n}, [&](std::int64_t i) { return x(i); });
  auto sy = sw::ShardedTensor<Scalar, Grid, Vector>::generate(groups, {n}, [&](std::int64_t i) { return y0(i); });
  const Scalar dot = sw::dot(sx, sy);
  sw::axpy(alpha, sx, sy);
  const double norm = sw::norm(sy);
  const DenseVector y = alpha * x + y0;
  worst = std::max(worst, relative(std::abs(dot - x.dot(y0)), std::abs(x.dot(y0))));
  worst = std::max(worst, relative(std::abs(norm - y.norm()), y.norm()));
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  if (size != 4) {
    if (rank == 0) std::printf("numerical: run with 4 ranks (a 2 x 2 mesh), not %d\n", size);
    status = 2;
  } else {
    sw::ProcessGroupMesh<Grid> groups(MPI_COMM_WORLD);
    const double real = work<double>(groups, 1.5, -0.5);
    const double complex = work<std::complex<double>>(groups, {1.5, 0.25}, {-0.5, 0.5});
    status = real < 1e-12 && complex < 1e-12 ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("numerical: gemm, adjoint, dot, axpy, norm (real %.1e, complex %.1e) %s\n", real, complex,
                  status == 0 ? "agree with Eigen" : "FAILED");
  }
  MPI_Finalize();
  return status;
}
#endif
