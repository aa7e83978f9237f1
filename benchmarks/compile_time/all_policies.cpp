// Compile-time cost of shardwise: this TU instantiates matmul for all five policies (fp64, on a
// 2 x 2 mesh), each distributing A and B, multiplying and gathering C; baseline.cpp does the same
// plain Eigen work without shardwise. benchmarks/compile_time.sh times both.
//
// It also runs (mpiexec -n 4) and checks each product against Eigen, so that it keeps compiling
// and meaning what it says: exit status 0 when every policy's relative error is below 1e-12.
// With -DSHARDWISE_COMPILE_TIME_HEADERS_ONLY it only includes the headers (compile_time.sh
// measures that too: the cost of parsing them, apart from the instantiations).
#include <mpi.h>

#include <Eigen/Core>
#include <cstdio>
#include <type_traits>

#include "shardwise/shardwise.hpp"

namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using R = sw::Replicated;
template <sw::fixed_string... N>
using S = sw::Split<N...>;
template <typename... D>
using TS = sw::TensorSharding<D...>;

namespace {

/// C = A B with A and B sharded as ShA and ShB (which must select Policy); the relative error.
template <typename Policy, typename ShA, typename ShB>
double multiply(sw::ProcessGroupMesh<Grid>& groups, const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                const Eigen::MatrixXd& expected) {
  static_assert(std::is_same_v<sw::matmul_policy_t<Grid, ShA, ShB>, Policy>);
  const auto sa = sw::ShardedMatrix<double, Grid, ShA>::distribute(groups, a);
  const auto sb = sw::ShardedMatrix<double, Grid, ShB>::distribute(groups, b);
  const Eigen::MatrixXd c = sw::matmul(sa, sb).to_global();
  return (c - expected).norm() / expected.norm();
}

}  // namespace

#ifdef SHARDWISE_COMPILE_TIME_HEADERS_ONLY
int main() { return 0; }
#else
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  if (size != 4) {
    if (rank == 0) std::printf("all_policies: run with 4 ranks (a 2 x 2 mesh), not %d\n", size);
    status = 2;
  } else {
    sw::ProcessGroupMesh<Grid> groups(MPI_COMM_WORLD);
    const Eigen::MatrixXd a = Eigen::MatrixXd::Random(37, 29), b = Eigen::MatrixXd::Random(29, 23);
    const Eigen::MatrixXd expected = a * b;
    const double errors[] = {
        multiply<sw::policy::Unsharded, TS<R, R>, TS<R, R>>(groups, a, b, expected),
        multiply<sw::policy::MatchedInner, TS<R, S<"y">>, TS<S<"y">, R>>(groups, a, b, expected),
        multiply<sw::policy::UnmatchedInner, TS<R, S<"y">>, TS<S<"x">, R>>(groups, a, b, expected),
        multiply<sw::policy::Outer, TS<S<"x">, S<"y">>, TS<S<"x">, R>>(groups, a, b, expected),
        multiply<sw::policy::Full, TS<S<"x">, S<"y">>, TS<S<"x">, S<"y">>>(groups, a, b, expected),
    };
    for (double e : errors) status |= e < 1e-12 ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
    if (rank == 0) std::printf("all_policies: five policies %s\n", status == 0 ? "agree with Eigen" : "FAILED");
  }
  MPI_Finalize();
  return status;
}
#endif
