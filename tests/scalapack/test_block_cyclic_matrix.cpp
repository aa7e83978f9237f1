// BlockCyclicMatrix shares its memory with ScaLAPACK: PDGESV solves A X = B in the matrices'
// own local arrays (no copy either way), and shardwise's gemm on the same objects checks the
// residual A X - B. Also: a view wraps a program's own local array (the same pointer), a bad
// descriptor on one rank is refused on every rank with the same message, and gemm refuses
// operands that do not multiply.
//
// The typed block-cyclic arrays (BlockCyclic<axis, NB> shardings) share memory with ScaLAPACK
// the same way: PDGESV solves in a typed array's memory through sw::scalapack::descriptor,
// sw::matmul of the typed arrays checks the residual, a typed view wraps a program's local
// array and descriptor, and a descriptor that disagrees with the type on one rank is refused on
// every rank with the same message, as is a descriptor whose M_ differs on one rank (named as
// that, before its LLD_ is checked against the rows M_ gives).
//
//   mpiexec -n P test_block_cyclic_matrix        (P = 2, 3, 4: every grid shape of P)
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi_errors.hpp"
#include "shardwise/scalapack/array_descriptor.hpp"
#include "shardwise/scalapack/block_cyclic_matrix.hpp"
#include "shardwise/scalapack/prototypes.h"
#include "shardwise/shardwise.hpp"

// BLACS, DESCINIT, NUMROC: shardwise/scalapack/prototypes.h. PDGESV is no
// routine of shardwise's (the header leaves it to the program, as a user's program declares it).
extern "C" {
void pdgesv_(const int* n, const int* nrhs, double* a, const int* ia, const int* ja, const int* desca, int* ipiv,
             double* b, const int* ib, const int* jb, const int* descb, int* info);
void pzgesv_(const int* n, const int* nrhs, std::complex<double>* a, const int* ia, const int* ja, const int* desca,
             int* ipiv, std::complex<double>* b, const int* ib, const int* jb, const int* descb, int* info);
}

namespace {

namespace sc = shardwise::scalapack;
int failures = 0;
int world = 0;

void expect(bool ok, const std::string& what) {
  int bad = ok ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (bad) {
    ++failures;
    if (world == 0) std::printf("FAIL: %s\n", what.c_str());
  }
}

template <typename Scalar>
void solve(int context, const std::string& grid_text) {
  const int n = 37, nrhs = 3, one = 1;
  // Diagonally dominant: the solve is well conditioned for any pivoting.
  auto a_of = [](std::int64_t i, std::int64_t j) {
    Scalar v = static_cast<double>((i * 7 + j * 3) % 11) / 11.0;
    if constexpr (shardwise::detail::is_complex_v<Scalar>) v += Scalar(0, static_cast<double>((i + 2 * j) % 5) / 5.0);
    return i == j ? v + Scalar(40.0) : v;
  };
  auto b_of = [](std::int64_t i, std::int64_t j) { return Scalar(static_cast<double>((i * 5 + j) % 9) - 4.0); };
  // PDGESV wants square blocks in A and B blocked as A's rows.
  sc::BlockCyclicMatrix<Scalar> a(context, n, n, 4, 4, 0, 0), x(context, n, nrhs, 4, 2, 0, 0);
  a.fill(a_of);
  x.fill(b_of);
  const sc::BlockCyclicMatrix<Scalar> a0 = a;  // the owning copies keep A and B for the residual
  sc::BlockCyclicMatrix<Scalar> residual = x;
  const Scalar* a_memory = a.data();
  std::vector<int> pivots(static_cast<std::size_t>(a.local_rows() + 4));
  int info = 0;
  if constexpr (std::is_same_v<Scalar, double>)
    pdgesv_(&n, &nrhs, a.data(), &one, &one, a.descriptor(), pivots.data(), x.data(), &one, &one, x.descriptor(), &info);
  else
    pzgesv_(&n, &nrhs, a.data(), &one, &one, a.descriptor(), pivots.data(), x.data(), &one, &one, x.descriptor(), &info);
  expect(info == 0 && a.data() == a_memory,
         grid_text + ": PDGESV/PZGESV on the matrices' own memory, INFO = " + std::to_string(info));
  // residual := A0 X - B
  sc::gemm<Scalar>('N', 'N', Scalar(1), a0, x, Scalar(-1), residual);
  double worst = 0;
  residual.for_each_local([&](std::int64_t, std::int64_t, const Scalar& r) { worst = std::max(worst, std::abs(r)); });
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  expect(worst < 1e-12, grid_text + ": |A X - B| = " + std::to_string(worst));
}

void views(int context, const sc::Grid& g, const std::string& grid_text) {
  // A program's own local array and descriptor, wrapped: the same memory.
  const int m = 23, n = 17, mb = 3, nb = 2, zero = 0;
  const int rows = numroc_(&m, &mb, &g.row, &zero, &g.rows), cols = numroc_(&n, &nb, &g.col, &zero, &g.cols);
  int lld = std::max(1, rows) + 2, info = 0;
  int desc[9];
  descinit_(desc, &m, &n, &mb, &nb, &zero, &zero, &context, &lld, &info);
  std::vector<double> mine(static_cast<std::size_t>(lld) * static_cast<std::size_t>(std::max(1, cols)), 0.0);
  auto v = sc::BlockCyclicMatrix<double>::view(mine.data(), desc);
  v.fill([](std::int64_t i, std::int64_t j) { return static_cast<double>(i * 100 + j); });
  bool right = !v.owning() && v.data() == mine.data() && v.ld() == lld;
  v.for_each_local([&](std::int64_t i, std::int64_t j, double& x) { right = right && x == static_cast<double>(i * 100 + j); });
  const auto copy = v;  // a copy of a view views the same memory
  right = right && copy.data() == mine.data();
  expect(right, grid_text + ": a view reads and writes the program's local array");

  // An LLD too small on the last rank only: every rank throws, with the same message.
  int bad[9];
  std::copy(desc, desc + 9, bad);
  if (g.row * g.cols + g.col == g.rows * g.cols - 1) bad[8] = 0;
  std::string message;
  try {
    static_cast<void>(sc::BlockCyclicMatrix<double>::view(mine.data(), bad));
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  const std::string want = "shardwise::scalapack::BlockCyclicMatrix::view: the descriptor(LLD_) is smaller than the "
                           "local rows (on grid rank " + std::to_string(g.rows * g.cols - 1) + ")";
  expect(message == want, grid_text + ": a bad LLD on one rank, refused on every rank; got '" + message + "'");

  // Operands that do not multiply.
  sc::BlockCyclicMatrix<double> a(context, 5, 4, 2, 2), b(context, 3, 6, 2, 2), c(context, 5, 6, 2, 2);
  message.clear();
  try {
    sc::gemm('N', 'N', 1.0, a, b, 0.0, c);
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  expect(message == "shardwise::scalapack::gemm: op(A) is 5 x 4, op(B) 3 x 6 and C 5 x 6; they do not multiply",
         grid_text + ": gemm of shapes that do not multiply; got '" + message + "'");
}

/// The typed arrays on the grid of `context`: a mesh whose axis order is the grid order's (a
/// row-major grid numbers process (r, c) as r * Q + c: the row axis first).
template <typename Mesh2>
void typed(int context, const Mesh2& mesh, const sc::Grid& g, const std::string& grid_text) {
  namespace sw = shardwise;
  sw::ProcessGroupMesh<Mesh2> groups(MPI_COMM_WORLD, mesh);
  const std::int64_t n = 29, nrhs = 3;
  auto a_of = [](std::int64_t i, std::int64_t j) {
    const double v = static_cast<double>((i * 7 + j * 3) % 11) / 11.0;
    return i == j ? v + 40.0 : v;
  };
  auto b_of = [](std::int64_t i, std::int64_t j) { return static_cast<double>((i * 5 + j) % 9) - 4.0; };
  const int order = static_cast<int>(n), columns = static_cast<int>(nrhs), one = 1;
  int info = 0;
  // ---- begin README block ----
  using Cyclic4x4 = sw::TensorSharding<sw::BlockCyclic<"r", 4>, sw::BlockCyclic<"c", 4>>;
  using Cyclic4x2 = sw::TensorSharding<sw::BlockCyclic<"r", 4>, sw::BlockCyclic<"c", 2>>;
  using A_t = sw::ShardedMatrix<double, Mesh2, Cyclic4x4, Eigen::ColMajor>;  // ScaLAPACK's layout, as a type
  using X_t = sw::ShardedMatrix<double, Mesh2, Cyclic4x2, Eigen::ColMajor>;
  auto a = A_t::generate(groups, {n, n}, a_of);          // each rank computes its own blocks
  const auto a0 = A_t::generate(groups, {n, n}, a_of);   // A, kept for the residual
  auto x = X_t::generate(groups, {n, nrhs}, b_of);       // B, then X
  const auto desc_a = sw::scalapack::descriptor(a, context), desc_x = sw::scalapack::descriptor(x, context);
  std::vector<int> pivots(static_cast<std::size_t>(a.local_rows() + 4));
  pdgesv_(&order, &columns, a.data(), &one, &one, desc_a.data(), pivots.data(), x.data(), &one, &one, desc_x.data(),
          &info);                                        // in the typed arrays' own memory
  const auto ax = sw::matmul(a0, x);                     // A X: SUMMA over the 4-wide k blocks, in place
  // ---- end README block ----
  expect(info == 0, grid_text + ": PDGESV in a typed block-cyclic array's memory, INFO = " + std::to_string(info));
  Eigen::MatrixXd b(n, nrhs);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < nrhs; ++j) b(i, j) = b_of(i, j);
  const double residual = (ax.to_global() - b).cwiseAbs().maxCoeff();
  expect(residual < 1e-12, grid_text + ": typed |A X - B| = " + std::to_string(residual));

  // A program's own local array and descriptor (LLD larger than the local rows), typed.
  using V_t = sw::ShardedMatrix<double, Mesh2, sw::TensorSharding<sw::BlockCyclic<"r", 3>, sw::BlockCyclic<"c", 2>>,
                                Eigen::ColMajor>;
  const int m = 23, cols_n = 17, mb = 3, nb = 2, zero = 0;
  const int rows = numroc_(&m, &mb, &g.row, &zero, &g.rows), cols = numroc_(&cols_n, &nb, &g.col, &zero, &g.cols);
  int lld = std::max(1, rows) + 2;
  int desc[9];
  descinit_(desc, &m, &cols_n, &mb, &nb, &zero, &zero, &context, &lld, &info);
  std::vector<double> mine(static_cast<std::size_t>(lld) * static_cast<std::size_t>(std::max(1, cols)), 0.0);
  auto bcm = sc::BlockCyclicMatrix<double>::view(mine.data(), desc);
  bcm.fill([](std::int64_t i, std::int64_t j) { return static_cast<double>(i * 100 + j); });
  const auto v = sw::scalapack::view<V_t>(groups, mine.data(), desc);
  Eigen::MatrixXd want(m, cols_n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < cols_n; ++j) want(i, j) = i * 100 + j;
  expect(v.data() == mine.data() && v.stride(1) == lld && v.to_global() == want,
         grid_text + ": a typed view of a program's local array and descriptor");

  // A descriptor whose MB is not the type's, on the last rank only: every rank throws the same.
  int bad[9];
  std::copy(desc, desc + 9, bad);
  const int last = groups.mesh().size() - 1;
  if (groups.rank() == last) bad[4] = 5;
  std::string message;
  try {
    static_cast<void>(sw::scalapack::view<V_t>(groups, mine.data(), bad));
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  const std::string expected = "shardwise::scalapack::view: the descriptor's blocks are 5 x 2 but the sharding's are "
                               "3 x 2 (on rank " + std::to_string(last) + ")";
  expect(message == expected, grid_text + ": a descriptor unlike the type on one rank; got '" + message + "'");

  // M_ larger on one rank only, with LLD_ just the local rows of the M_ the others pass: the
  // cause (M_ differs, on which ranks) on every rank, the same text, not the consequence on
  // that rank ("LLD_ is 8 but this process holds 11 rows").
  if (groups.mesh().size() > 1) {
    const int odd = groups.mesh().size() / 2, larger = m + mb * g.rows;  // one more block per process row
    std::array<int, 9> other{};
    std::copy(desc, desc + 9, other.begin());
    other[8] = std::max(1, rows);
    if (groups.rank() == odd) other[2] = larger;
    const sw::testing::RankOutcome outcome = sw::testing::run_and_catch<std::invalid_argument>(
        [&] { static_cast<void>(sw::scalapack::view<V_t>(groups, mine.data(), other.data())); });
    const std::string verdict = sw::testing::same_error_verdict(
        sw::testing::gather_outcomes(MPI_COMM_WORLD, outcome),
        "shardwise::scalapack::view: the descriptors differ across ranks (every rank must pass the same): M_: " +
            std::to_string(m) + " on rank");
    const std::string odd_one = ", " + std::to_string(larger) + " on rank " + std::to_string(odd);
    expect(verdict.empty() && outcome.what.find(odd_one) != std::string::npos &&
               outcome.what.find("LLD_") == std::string::npos,
           grid_text + ": M_ unlike the others' on one rank; got '" + outcome.what + "'" +
               (verdict.empty() ? "" : "\n" + verdict));
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int grids = 0;
  for (int p = 1; p <= size; ++p) {
    if (size % p != 0) continue;
    for (const char* order : {"R", "C"}) {
      int context = 0;
      Cblacs_get(0, 0, &context);
      Cblacs_gridinit(&context, order, p, size / p);
      const std::string grid_text = std::to_string(p) + "x" + std::to_string(size / p) + " order " + order;
      solve<double>(context, grid_text);
      solve<std::complex<double>>(context, grid_text);
      views(context, *sc::grid_of(context), grid_text);
      using RowFirst = shardwise::Mesh<shardwise::Axis<"r", shardwise::dynamic_extent>, shardwise::Axis<"c", shardwise::dynamic_extent>>;
      using ColFirst = shardwise::Mesh<shardwise::Axis<"c", shardwise::dynamic_extent>, shardwise::Axis<"r", shardwise::dynamic_extent>>;
      if (order[0] == 'R') typed(context, RowFirst{p, size / p}, *sc::grid_of(context), grid_text);
      else typed(context, ColFirst{size / p, p}, *sc::grid_of(context), grid_text);
      Cblacs_gridexit(context);
      ++grids;
    }
  }
  if (world == 0) std::printf("%d ranks, %d grids: %s\n", size, grids, failures == 0 ? "all right" : "FAILED");
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
