// calibrate_machine: this machine as the time model (shardwise/plan/time_model.hpp) sees it, an
// sw::Machine: one core's dgemm rate (OpenBLAS, one thread, the best of the sizes the simulated
// runs multiply) and the MPI bandwidth and latency between two ranks (ping-pong: half the
// round trip of 8 bytes, and of 64 MiB). Printed as a C++ initializer and as JSON.
//
//   simulation/simulate machine       (builds this with mpicxx and runs it under mpiexec -n 2)
//
// Two ranks of one machine talk through shared memory, not a network: the numbers describe
// this machine for the model (docs/scaling.md, "Describing a machine"); a cluster's are measured
// the same way with the two ranks on two nodes.
#include <cblas.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The best dgemm rate over n = 1024, 2048 (flop/s), each the best of 3 runs.
double gemm_rate() {
  double best_rate = 0;
  for (int n : {1024, 2048}) {
    std::vector<double> a(static_cast<std::size_t>(n) * n, 1.0), b(a), c(a);
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
      const auto start = std::chrono::steady_clock::now();
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0, c.data(), n);
      best = std::min(best, seconds_since(start));
    }
    best_rate = std::max(best_rate, 2.0 * n * n * static_cast<double>(n) / best);
  }
  return best_rate;
}

/// Half the shortest round trip of `bytes` between ranks 0 and 1, over `reps` round trips.
double one_way_seconds(int rank, std::size_t bytes, int reps) {
  std::vector<char> buffer(bytes, 1);
  const int count = static_cast<int>(bytes);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    if (rank == 0) {
      MPI_Send(buffer.data(), count, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buffer.data(), count, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buffer.data(), count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), count, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
    best = std::min(best, seconds_since(start) / 2);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "calibrate_machine: run it on 2 ranks (mpiexec -n 2)\n");
    MPI_Finalize();
    return 2;
  }
  // One rank multiplies while the other waits, so that the two do not share the core's time.
  const double rate = rank == 0 ? gemm_rate() : 0;
  const double latency = one_way_seconds(rank, 8, 1000);
  const std::size_t large = std::size_t{64} << 20;
  const double bandwidth = static_cast<double>(large) / (one_way_seconds(rank, large, 5) - latency);
  if (rank == 0) {
    // The model charges a message on a fat tree 4 links' latency (host, leaf, spine, leaf,
    // host): the measured latency is a message's, so a link's is a quarter of it.
    std::printf("// This machine (simulation/simulate machine): one core's dgemm, MPI between two ranks.\n"
                "constexpr sw::Machine this_machine{.gemm_flops_per_second = %.4g,\n"
                "                                   .link_bytes_per_second = %.4g,\n"
                "                                   .link_latency_seconds = %.4g,  // a message: %.4g s\n"
                "                                   .network = sw::Network::fat_tree};\n",
                rate, bandwidth, latency / 4, latency);
    std::printf("{\"gemm_flops_per_second\": %.4g, \"link_bytes_per_second\": %.4g, \"link_latency_seconds\": %.4g, "
                "\"message_latency_seconds\": %.4g, \"network\": \"fat_tree\", \"broadcast\": \"binomial_tree\"}\n",
                rate, bandwidth, latency / 4, latency);
  }
  MPI_Finalize();
  return 0;
}
