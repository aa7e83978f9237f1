// The baseline of numerical.cpp in benchmarks/compile_time.sh: the same plain work with Eigen
// and MPI only (real and complex C = alpha A B + beta C, the same on Aᴴ's adjoint, dot, axpy
// and norm on vectors, the errors reduced over the ranks), so that the difference of the two
// compile times is what shardwise costs a numerical code.
#include <mpi.h>

#include <Eigen/Core>
#include <algorithm>
#include <complex>
#include <cstdio>

namespace {

double relative(double error, double size) { return size > 0 ? error / size : error; }

template <typename Scalar>
double work(Scalar alpha, Scalar beta) {
  using Dense = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  using DenseVector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
  const Dense a = Dense::Random(37, 29), b = Dense::Random(29, 23), c0 = Dense::Random(37, 23);
  const Dense ah = a.adjoint();
  Dense c = c0;
  c = alpha * a * b + beta * c;
  c = alpha * ah.adjoint() * b + beta * c;
  Dense expected = alpha * a * b + beta * c0;
  expected = alpha * a * b + beta * expected;
  double worst = relative((c - expected).norm(), expected.norm());

  const DenseVector x = DenseVector::Random(101), y0 = DenseVector::Random(101);
  DenseVector y = y0;
  const Scalar dot = x.dot(y);
  y += alpha * x;
  const double norm = y.norm();
  worst = std::max(worst, relative(std::abs(dot - x.dot(y0)), std::abs(x.dot(y0))));
  worst = std::max(worst, relative(std::abs(norm - (alpha * x + y0).norm()), norm));
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double error = std::max(work<double>(1.5, -0.5), work<std::complex<double>>({1.5, 0.25}, {-0.5, 0.5}));
  MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf("numerical baseline: error %g\n", error);
  MPI_Finalize();
  return error < 1e-12 ? 0 : 1;
}
