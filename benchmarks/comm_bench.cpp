// 1 MiB all_reduce and all_gather of doubles: raw MPI, MpiCommunicator, AnyCommunicator over
// MPI, and the virtual cluster at 2 ranks (measured inside the cluster run, on MPI rank 0 only);
// and a reduce_scatter of uneven parts, Open MPI's against the pairwise exchange.
// all_reduce: 1 MiB per rank in and out. all_gather: 1 MiB out, 1 MiB / P in from each rank.
//
//   mpiexec -n 2 --bind-to none build/benchmarks/comm_bench    (with the OMPI_* variables of
//   TOOLCHAIN-NOTES), or: meson test -C build --benchmark --suite comm
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <shardwise/bench/mpi_benchmark_main.hpp>
#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/comm/mpi.hpp"
#include "shardwise/comm/pairwise_reduce_scatter.hpp"
#include "shardwise/comm/virtual_cluster.hpp"

namespace {

namespace sw = shardwise;
using sw::bench::time_collective;

constexpr std::size_t mebibyte = std::size_t{1} << 20;
constexpr std::size_t count = mebibyte / sizeof(double);

int world_size() {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

void report(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(mebibyte));
}

// ---- all_reduce -------------------------------------------------------------------

void BM_AllReduce_RawMpi(benchmark::State& state) {
  std::vector<double> in(count, 1.0), out(count);
  time_collective(state, MPI_COMM_WORLD, [&] {
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  });
  report(state);
}

template <typename Comm>
void all_reduce_through(benchmark::State& state, Comm& comm) {
  std::vector<double> in(count, 1.0), out(count);
  time_collective(state, MPI_COMM_WORLD, [&] { comm.all_reduce(in, out); });
  report(state);
}
void BM_AllReduce_MpiCommunicator(benchmark::State& state) {
  sw::MpiCommunicator comm(MPI_COMM_WORLD);
  all_reduce_through(state, comm);
}
void BM_AllReduce_AnyCommunicator(benchmark::State& state) {
  sw::AnyCommunicator comm(sw::MpiCommunicator(MPI_COMM_WORLD));
  all_reduce_through(state, comm);
}

// ---- all_gather -------------------------------------------------------------------

void BM_AllGather_RawMpi(benchmark::State& state) {
  const std::size_t block = count / static_cast<std::size_t>(world_size());
  std::vector<double> in(block, 1.0), out(block * static_cast<std::size_t>(world_size()));
  time_collective(state, MPI_COMM_WORLD, [&] {
    MPI_Allgather(in.data(), static_cast<int>(block), MPI_DOUBLE, out.data(), static_cast<int>(block), MPI_DOUBLE,
                  MPI_COMM_WORLD);
  });
  report(state);
}

template <typename Comm>
void all_gather_through(benchmark::State& state, Comm& comm) {
  const std::size_t block = count / static_cast<std::size_t>(comm.size());
  std::vector<double> in(block, 1.0), out(block * static_cast<std::size_t>(comm.size()));
  time_collective(state, MPI_COMM_WORLD, [&] { comm.all_gather(in, out); });
  report(state);
}
void BM_AllGather_MpiCommunicator(benchmark::State& state) {
  sw::MpiCommunicator comm(MPI_COMM_WORLD);
  all_gather_through(state, comm);
}
void BM_AllGather_AnyCommunicator(benchmark::State& state) {
  sw::AnyCommunicator comm(sw::MpiCommunicator(MPI_COMM_WORLD));
  all_gather_through(state, comm);
}

// ---- reduce_scatter of uneven parts: Open MPI's against the pairwise exchange -----------
// The sizes are the ScaLAPACK drop-in's reduced p?gemm at 16 x 16, 104 x 104 and 200 x 200
// doubles (sub(C) over the grid's P ranks, the first rank one element more); the ratio of the
// two rows of one size is what the drop-in gains by not calling MPI_Reduce_scatter.

std::vector<int> parts_of(std::int64_t total, std::vector<int>& offsets) {
  const int p = world_size();
  std::vector<int> counts(static_cast<std::size_t>(p), static_cast<int>(total / p));
  counts[0] += static_cast<int>(total % p);
  offsets.assign(static_cast<std::size_t>(p), 0);
  for (std::size_t q = 1; q < counts.size(); ++q) offsets[q] = offsets[q - 1] + counts[q - 1];
  return counts;
}

void BM_ReduceScatter_RawMpi(benchmark::State& state) {
  std::vector<int> offsets;
  const std::vector<int> counts = parts_of(state.range(0), offsets);
  std::vector<double> in(static_cast<std::size_t>(state.range(0)), 1.0), out(static_cast<std::size_t>(counts[0]));
  time_collective(state, MPI_COMM_WORLD, [&] {
    MPI_Reduce_scatter(in.data(), out.data(), counts.data(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  });
}

void BM_ReduceScatter_Pairwise(benchmark::State& state) {
  sw::AnyCommunicator comm(sw::MpiCommunicator(MPI_COMM_WORLD));
  std::vector<int> offsets;
  const std::vector<int> counts = parts_of(state.range(0), offsets);
  std::vector<double> in(static_cast<std::size_t>(state.range(0)), 1.0), out(static_cast<std::size_t>(counts[0]));
  std::vector<double> scratch(out.size());
  time_collective(state, MPI_COMM_WORLD, [&] {
    sw::detail::pairwise_reduce_scatter<double>(comm, std::span<const double>(in), counts, offsets,
                                                std::span<double>(out), std::span<double>(scratch));
  });
}

BENCHMARK(BM_ReduceScatter_RawMpi)->Arg(256)->Arg(10816)->Arg(40000)->UseManualTime();
BENCHMARK(BM_ReduceScatter_Pairwise)->Arg(256)->Arg(10816)->Arg(40000)->UseManualTime();
BENCHMARK(BM_AllReduce_RawMpi)->UseManualTime();
BENCHMARK(BM_AllReduce_MpiCommunicator)->UseManualTime();
BENCHMARK(BM_AllReduce_AnyCommunicator)->UseManualTime();
BENCHMARK(BM_AllGather_RawMpi)->UseManualTime();
BENCHMARK(BM_AllGather_MpiCommunicator)->UseManualTime();
BENCHMARK(BM_AllGather_AnyCommunicator)->UseManualTime();

// ---- the virtual cluster: 2 ranks as threads of MPI rank 0 ----------------------------

/// The benchmark loop inside a cluster run: virtual rank 0 drives the State and tells the
/// others whether to go on (untimed); each step is timed on every rank and the slowest counts.
template <typename Step>
void time_virtual(benchmark::State& state, sw::VirtualCommunicator& comm, Step&& step) {
  for (;;) {
    int go_on = comm.rank() == 0 ? static_cast<int>(state.KeepRunning()) : 0;
    comm.broadcast(std::span<int>(&go_on, 1), 0);
    if (go_on == 0) return;
    comm.barrier();
    const auto start = std::chrono::steady_clock::now();
    step();
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    comm.all_reduce(std::span<double>(&elapsed, 1), sw::ReduceOp::max);
    if (comm.rank() == 0) state.SetIterationTime(elapsed);
  }
}

void BM_AllReduce_VirtualCluster(benchmark::State& state) {
  sw::run_virtual_cluster(2, [&](sw::VirtualCommunicator& comm) {
    std::vector<double> in(count, 1.0), out(count);
    time_virtual(state, comm, [&] { comm.all_reduce(in, out); });
  });
  report(state);
}

void BM_AllGather_VirtualCluster(benchmark::State& state) {
  sw::run_virtual_cluster(2, [&](sw::VirtualCommunicator& comm) {
    const std::size_t block = count / 2;
    std::vector<double> in(block, 1.0), out(count);
    time_virtual(state, comm, [&] { comm.all_gather(in, out); });
  });
  report(state);
}

}  // namespace

int main(int argc, char** argv) {
  return sw::bench::mpi_benchmark_main(argc, argv, [](int rank) {
    if (rank != 0) return;
    benchmark::RegisterBenchmark("BM_AllReduce_VirtualCluster/ranks:2", BM_AllReduce_VirtualCluster)->UseManualTime();
    benchmark::RegisterBenchmark("BM_AllGather_VirtualCluster/ranks:2", BM_AllGather_VirtualCluster)->UseManualTime();
  });
}
