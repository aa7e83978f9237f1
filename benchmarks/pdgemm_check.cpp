// Checks the benchmark's pdgemm call (pdgemm.hpp) against serial Eigen, so that the peer we
// compare with computes the right product: on every grid of the world, several block sizes and
// uneven shapes (partial last blocks, ranks without a block). Every rank builds the same global
// A and B, fills its block-cyclic parts from them, and compares its part of C with A * B.
// Exit status 0 when every rank's worst relative error is below 1e-12.
//
//   mpiexec -n 2 build/benchmarks/pdgemm_check      (meson test: pdgemm_check_np2)
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "pdgemm.hpp"

namespace {

Eigen::MatrixXd random_matrix(int rows, int cols, unsigned seed) {
  std::mt19937_64 draw(seed);  // the same on every rank
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Eigen::MatrixXd m(rows, cols);
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) m(i, j) = uniform(draw);
  return m;
}

/// Worst |C_pdgemm - C_eigen| / max |C_eigen| over this rank's part of C.
double check(int p, int q, int nb, int m, int n, int k, unsigned seed) {
  namespace sb = shardwise::bench;
  const sb::BlacsGrid& g = sb::BlacsGrid::get(p, q);
  const Eigen::MatrixXd a = random_matrix(m, k, seed), b = random_matrix(k, n, seed + 1);
  const Eigen::MatrixXd expected = a * b;
  sb::BlockCyclicMatrix da(g, m, k, nb), db(g, k, n, nb), dc(g, m, n, nb);
  da.fill(g, [&](int i, int j) { return a(i, j); });
  db.fill(g, [&](int i, int j) { return b(i, j); });
  dc.fill(g, [](int, int) { return 12345.0; });  // beta = 0 must overwrite this
  sb::pdgemm(da, db, dc);
  double worst = 0.0;
  for (int j = 0; j < dc.local_cols; ++j)
    for (int i = 0; i < dc.local_rows; ++i) {
      const int gi = sb::BlockCyclicMatrix::global_index(i, nb, g.my_row, g.rows);
      const int gj = sb::BlockCyclicMatrix::global_index(j, nb, g.my_col, g.cols);
      worst = std::max(worst, std::abs(dc.at(i, j) - expected(gi, gj)));
    }
  const double scale = std::max(1.0, expected.cwiseAbs().maxCoeff());
  return worst / scale;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  struct Shape {
    int m, n, k;
  };
  const Shape shapes[] = {{64, 64, 64}, {37, 23, 29}, {5, 70, 3}, {100, 1, 50}, {1, 1, 1}};
  int failures = 0, cases = 0;
  unsigned seed = 1;
  for (const auto& [p, q] : shardwise::bench::grid_shapes(size))
    for (int nb : {1, 4, 16, 64})
      for (const Shape& s : shapes) {
        double error = check(p, q, nb, s.m, s.n, s.k, seed += 2);
        MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        ++cases;
        if (!(error < 1e-12)) {
          ++failures;
          if (rank == 0)
            std::printf("FAIL grid %dx%d nb %d m %d n %d k %d: relative error %.3g\n", p, q, nb, s.m, s.n, s.k,
                        error);
        }
      }
  if (rank == 0)
    std::printf("pdgemm_check on %d ranks: %d of %d cases agree with Eigen (relative error < 1e-12)\n", size,
                cases - failures, cases);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
