// One FeedForward forward + backward (with dX), b*s = 4096 tokens, m = 1024, h = 4096, fp32,
// on the MPI ranks along one axis: Megatron tensor parallel (W1 by columns, W2 by rows: one
// AllReduce of b*s*m each way) against Unsharded (every rank runs the whole layer).
// The time of an iteration is the slowest rank's; GFLOP/s counts the 12 * b*s * m * h flops
// of the six GEMMs of one layer (not per rank), so the two are directly comparable.
//
//   mpiexec -n 2 --bind-to none build/benchmarks/nn_bench     (with the OMPI_* variables of
//   TOOLCHAIN-NOTES and OPENBLAS_NUM_THREADS=1), or: meson test -C build --benchmark --suite nn
#include <cstdint>
#include <memory>

#include <shardwise/bench/mpi_benchmark_main.hpp>
#include "shardwise/comm/counting.hpp"
#include "shardwise/comm/mpi.hpp"
#include "shardwise/nn/feed_forward.hpp"

namespace {

namespace sw = shardwise;
using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;
using Line = sw::Mesh<sw::Axis<"tp", sw::dynamic_extent>>;

constexpr std::int64_t tokens = 4096, m = 1024, h = 4096;

int world_size() {
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

template <typename Layer>
void run(benchmark::State& state) {
  auto counters = std::make_shared<sw::CommCounters>();
  sw::ProcessGroupMesh<Line> groups(
      sw::CountingCommunicator<sw::MpiCommunicator>(sw::MpiCommunicator(MPI_COMM_WORLD), counters), Line{world_size()});
  const float scale = 1.0f / 32.0f;
  Layer layer = Layer::from_global(groups, Eigen::MatrixXf::Random(m, h) * scale, Eigen::VectorXf::Random(h) * scale,
                                   Eigen::MatrixXf::Random(h, m) * scale, Eigen::VectorXf::Random(m) * scale);
  const auto x = Layer::input_type::distribute(groups, Eigen::MatrixXf::Random(tokens, m), tokens, 1);
  const auto dy = Layer::output_type::distribute(groups, Eigen::MatrixXf::Random(tokens, m), tokens, 1);
  typename Layer::output_type y(groups, tokens, 1, m);
  typename Layer::input_type dx(groups, tokens, 1, m);
  typename Layer::Cache cache;
  layer.forward_into(y, x, cache);  // warm up: buffers, groups, BLAS
  layer.backward_into(&dx, dy, cache);
  const sw::Traffic before = counters->total();
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] {
    layer.forward_into(y, x, cache);
    layer.backward_into(&dx, dy, cache);
  });
  const sw::Traffic sent = counters->total() - before;
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(12.0 * tokens * m * h * iterations * 1e-9, benchmark::Counter::kIsRate);
  state.counters["MiB_sent_per_rank"] = static_cast<double>(sent.bytes) / iterations / (1 << 20);
  state.SetLabel(Layer::describe());
}

using Unsharded = sw::FeedForward<float, Line, TS<R, R, R>, TS<R, R>, TS<R, R>>;
using MegatronTp = sw::FeedForward<float, Line, TS<R, R, R>, TS<R, S<"tp">>, TS<S<"tp">, R>>;

void BM_FeedForward_Unsharded(benchmark::State& state) { run<Unsharded>(state); }
void BM_FeedForward_MegatronTP(benchmark::State& state) { run<MegatronTp>(state); }

BENCHMARK(BM_FeedForward_Unsharded)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FeedForward_MegatronTP)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) { return sw::bench::mpi_benchmark_main(argc, argv); }
