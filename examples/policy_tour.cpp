// The policy tour: each of the seed's seven test cases on a 2 x 4 mesh of MPI ranks. For each,
// what the compiler picked (policy, schedule), what the cost model says the busiest rank
// sends, what it really sent, and the error against a serial Eigen product.
//
//   mpiexec -n 8 policy_tour [n]      (m = n = k, default 1024)
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>

#include <shardwise/shardwise.hpp>

namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using sw::Replicated;
template <sw::fixed_string... Axes> using Split = sw::Split<Axes...>;
template <typename Rows, typename Cols> using Sharding = sw::TensorSharding<Rows, Cols>;
using ReplicatedC = sw::replicated_sharding_t<2>;

Eigen::MatrixXd random_matrix(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  return Eigen::MatrixXd::NullaryExpr(rows, cols, [&] { return uniform(engine); });
}

struct Tour {
  sw::ProcessGroupMesh<Grid>& groups;
  const sw::CommCounters& counters;
  Eigen::MatrixXd a, b, reference;  // reference only on rank 0

  template <typename ShA, typename ShB>
  void visit(const char* title) {
    using Plan = sw::matmul_plan<Grid, ShA, ShB, ReplicatedC>;
    const sw::MatmulShape shape{.m = a.rows(), .k = a.cols(), .n = b.cols()};
    const auto sa = sw::ShardedMatrix<double, Grid, ShA>::distribute(groups, a);
    const auto sb = sw::ShardedMatrix<double, Grid, ShB>::distribute(groups, b);

    sw::check_level() = sw::CheckLevel::local;  // count the schedule alone
    const sw::Traffic before = counters.total();
    const auto c = sw::matmul<ReplicatedC>(sa, sb);
    const sw::Traffic measured = counters.total() - before;
    sw::check_level() = sw::CheckLevel::cross_rank;

    const sw::Traffic modeled = Plan::traffic(groups.mesh(), groups.coordinate(), shape, sizeof(double));
    long long busiest[2] = {measured.bytes, modeled.bytes};
    int all_equal = measured == modeled;
    MPI_Allreduce(MPI_IN_PLACE, busiest, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &all_equal, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (groups.rank() != 0) return;
    const double error = (c.local() - reference).cwiseAbs().maxCoeff() / reference.cwiseAbs().maxCoeff();
    std::printf("%s: A%s B%s\n  %s\n  busiest rank sends: modeled %.2f MiB, measured %.2f MiB (%s)\n"
                "  max |C - C_serial| / max |C_serial| = %.1e\n\n",
                title, ShA::to_string().c_str(), ShB::to_string().c_str(), Plan::describe().c_str(),
                static_cast<double>(busiest[1]) / (1 << 20), static_cast<double>(busiest[0]) / (1 << 20),
                all_equal ? "every rank: measured == modeled" : "MISMATCH on some rank", error);
  }
};

int main(int argc, char** argv) {
  // An exception on any rank ends every rank with its message (MPI_Abort), rather than leaving
  // the others waiting in a collective.
  sw::MpiEnvironment mpi(argc, argv);
  {
    const Eigen::Index n = argc > 1 ? std::atol(argv[1]) : 1024;
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<Grid> groups(sw::CountingCommunicator<sw::MpiCommunicator>(sw::MpiCommunicator(MPI_COMM_WORLD), counters));
    Tour tour{groups, *counters, random_matrix(n, n, 1), random_matrix(n, n, 2), {}};
    if (groups.rank() == 0) {
      tour.reference = tour.a * tour.b;
      std::printf("shardwise policy tour: the seed's cases on a 2 x 4 mesh (x, y) of %d MPI ranks,\n"
                  "m = n = k = %ld, fp64, C replicated as in the seed\n\n", groups.size(), static_cast<long>(n));
    }
    tour.visit<ReplicatedC, ReplicatedC>("Unsharded");
    tour.visit<Sharding<Replicated, Split<"y">>, Sharding<Split<"y">, Replicated>>("MatchedInner, k over y");
    tour.visit<Sharding<Replicated, Split<"x">>, Sharding<Split<"x">, Replicated>>("MatchedInner, k over x");
    tour.visit<Sharding<Replicated, Split<"x", "y">>, Sharding<Split<"x", "y">, Replicated>>("MatchedInner, k over (x,y)");
    tour.visit<Sharding<Replicated, Split<"y">>, Sharding<Split<"x">, Replicated>>("UnmatchedInner");
    tour.visit<Sharding<Split<"x">, Split<"y">>, Sharding<Split<"x">, Replicated>>("Outer");
    tour.visit<Sharding<Split<"x">, Split<"y">>, Sharding<Split<"x">, Split<"y">>>("Full");
  }
  return 0;
}
