// Compile-time cost of shardwise's FeedForward: this TU instantiates the layer for all four
// policies (fp64, on a 2 x 2 mesh), each distributing its parameters and X, running forward and
// backward and gathering Y; benchmarks/compile_time.sh times it next to baseline.cpp.
//
// It also runs (mpiexec -n 4) and checks every policy against the Unsharded layer on the same
// data, so that it keeps compiling and meaning what it says: exit status 0 when they agree to
// 1e-12.
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

constexpr long b = 4, s = 6, m = 8, h = 12;

/// Y and dX of one layer with these shardings (which must select Policy), gathered.
template <typename Policy, typename ShX, typename ShW1, typename ShW2>
Eigen::MatrixXd run(const sw::ProcessGroupMesh<Grid>& groups, const Eigen::MatrixXd& w1, const Eigen::MatrixXd& w2,
                    const Eigen::VectorXd& b1, const Eigen::VectorXd& b2, const Eigen::MatrixXd& x) {
  using Layer = sw::FeedForward<double, Grid, ShX, ShW1, ShW2>;
  static_assert(std::is_same_v<typename Layer::policy, Policy>);
  Layer layer = Layer::from_global(groups, w1, b1, w2, b2);
  const auto input = Layer::input_type::distribute(groups, x, b, s);
  typename Layer::Cache cache;
  const auto y = layer.forward(input, cache);
  const auto dx = layer.backward(y, cache);
  Eigen::MatrixXd both(x.rows(), 2 * m);
  both << y.to_global(), dx.to_global();
  return both;
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
    if (rank == 0) std::printf("all_ffn_policies: run with 4 ranks (a 2 x 2 mesh), not %d\n", size);
    status = 2;
  } else {
    sw::ProcessGroupMesh<Grid> groups(MPI_COMM_WORLD);
    const Eigen::MatrixXd w1 = Eigen::MatrixXd::Random(m, h), w2 = Eigen::MatrixXd::Random(h, m);
    const Eigen::VectorXd b1 = Eigen::VectorXd::Random(h), b2 = Eigen::VectorXd::Random(m);
    const Eigen::MatrixXd x = Eigen::MatrixXd::Random(b * s, m);
    const Eigen::MatrixXd expected =
        run<sw::ffn_policy::Unsharded, TS<R, R, R>, TS<R, R>, TS<R, R>>(groups, w1, w2, b1, b2, x);
    const Eigen::MatrixXd results[] = {
        run<sw::ffn_policy::GSPMD, TS<S<"x">, R, S<"y">>, TS<S<"x">, S<"y">>, TS<S<"y">, S<"x">>>(groups, w1, w2, b1,
                                                                                                  b2, x),
        run<sw::ffn_policy::MegatronTP, TS<R, R, R>, TS<R, S<"x", "y">>, TS<S<"x", "y">, R>>(groups, w1, w2, b1, b2, x),
        run<sw::ffn_policy::MegatronSP, TS<R, S<"x", "y">, R>, TS<R, S<"x", "y">>, TS<S<"x", "y">, R>>(groups, w1, w2,
                                                                                                        b1, b2, x),
    };
    for (const Eigen::MatrixXd& r : results) status |= (r - expected).norm() / expected.norm() < 1e-12 ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("all_ffn_policies: four policies %s\n", status == 0 ? "agree with each other" : "FAILED");
  }
  MPI_Finalize();
  return status;
}
#endif
