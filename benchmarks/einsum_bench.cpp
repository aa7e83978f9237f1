// einsum on the MPI ranks along one axis x (run on 2 ranks, one per core), fp64:
//
//   einsum/batched/b_split        "bmk,bkn->bmn" with b split over x: every rank multiplies its
//                                 own batches, no communication. Its GFLOP/s against
//                                 blas_single_batched (the same batched GEMMs on one core, rank 0
//                                 alone): the target is 0.9 x 2 x that.
//   einsum/rank2/<plan>           "mk,kn->mn" on rank-2 ShardedTensors next to
//   matmul/<plan>                 sw::matmul on ShardedMatrix for the same plan (Outer: A's rows
//                                 over x, B whole; MatchedInner: k over x, AllReduce): the same
//                                 schedule, so the times should agree within the noise.
//   attention/<sharding>          one forward + backward of multi-head self-attention
//                                 (examples/attention.hpp): heads over x (tp) against every
//                                 tensor whole on every rank (unsharded).
//
//   mpiexec -n 2 --bind-to core build-bench/benchmarks/einsum_bench   (with the OMPI_* variables
//   of TOOLCHAIN-NOTES and OPENBLAS_NUM_THREADS=1), or benchmarks/run.
#include <cstdint>
#include <memory>

#include "attention.hpp"
#include <shardwise/bench/mpi_benchmark_main.hpp>
#include "shardwise/comm/mpi.hpp"
#include "shardwise/tensor.hpp"

namespace {

namespace sw = shardwise;
using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <sw::fixed_string... N> using P = sw::Partial<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;
using Line = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>>;
template <int N> using Tensor = Eigen::Tensor<double, N, Eigen::RowMajor>;

constexpr std::int64_t batches = 16, bm = 1024, bk = 1024, bn = 1024;  // batched: 16 GEMMs of 1024^3
constexpr std::int64_t square = 2048;                                   // rank 2: 2048^3

sw::ProcessGroupMesh<Line> world_groups() {
  return sw::ProcessGroupMesh<Line>(sw::MpiCommunicator(MPI_COMM_WORLD), Line{sw::bench::world_size()});
}

template <int N>
Tensor<N> random_tensor(const std::array<Eigen::Index, N>& dims) {
  Tensor<N> t(dims);
  t.setRandom();
  return t;
}

void set_gflops(benchmark::State& state, double flops) {
  state.counters["GFLOPs"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

// ---- batched ---------------------------------------------------------------------------------

void BM_Einsum_Batched(benchmark::State& state) {
  auto groups = world_groups();
  using Sh = TS<S<"x">, R, R>;
  const auto a = sw::ShardedTensor<double, Line, Sh>::distribute(groups, random_tensor<3>({batches, bm, bk}));
  const auto b = sw::ShardedTensor<double, Line, Sh>::distribute(groups, random_tensor<3>({batches, bk, bn}));
  (void)sw::einsum<"bmk,bkn->bmn">(a, b);  // warm up
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] { benchmark::DoNotOptimize(sw::einsum<"bmk,bkn->bmn">(a, b)); });
  set_gflops(state, 2.0 * batches * bm * bn * bk);
  state.SetLabel(sw::einsum_plan<"bmk,bkn->bmn", Line, Sh, Sh>::describe());
}
BENCHMARK(BM_Einsum_Batched)->Name("einsum/batched/b_split")->UseManualTime()->Unit(benchmark::kMillisecond);

/// The same batched GEMMs on one core (rank 0 alone; registered by register_single).
void blas_single_batched(benchmark::State& state) {
  const Tensor<3> a = random_tensor<3>({batches, bm, bk}), b = random_tensor<3>({batches, bk, bn});
  Tensor<3> c(batches, bm, bn);
  for (auto _ : state) {
    for (std::int64_t i = 0; i < batches; ++i) {
      const sw::detail::matrix_view<const double> av{a.data() + i * bm * bk, bm, bk, bk, true};
      const sw::detail::matrix_view<const double> bv{b.data() + i * bk * bn, bk, bn, bn, true};
      sw::detail::gemm<double>({c.data() + i * bm * bn, bm, bn, bn, true}, av, bv, false);
    }
    benchmark::DoNotOptimize(c.data());
  }
  set_gflops(state, 2.0 * batches * bm * bn * bk);
  state.SetLabel(sw::has_blas_backend && sw::gemm_backend() == sw::GemmBackend::blas ? "BLAS dgemm per batch"
                                                                                        : "Eigen GEMM per batch");
}

// ---- rank 2: einsum next to matmul for the same plan ------------------------------------------

template <typename ShA, typename ShB>
void einsum_rank2(benchmark::State& state) {
  auto groups = world_groups();
  const Tensor<2> at = random_tensor<2>({square, square}), bt = random_tensor<2>({square, square});
  const auto a = sw::ShardedTensor<double, Line, ShA>::distribute(groups, at);
  const auto b = sw::ShardedTensor<double, Line, ShB>::distribute(groups, bt);
  (void)sw::einsum<"mk,kn->mn">(a, b);
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] { benchmark::DoNotOptimize(sw::einsum<"mk,kn->mn">(a, b)); });
  set_gflops(state, 2.0 * square * square * square);
  state.SetLabel(sw::einsum_plan<"mk,kn->mn", Line, ShA, ShB>::describe());
}

template <typename ShA, typename ShB>
void matmul_rank2(benchmark::State& state) {
  auto groups = world_groups();
  const auto a = sw::ShardedMatrix<double, Line, ShA>::distribute(groups, Eigen::MatrixXd::Random(square, square));
  const auto b = sw::ShardedMatrix<double, Line, ShB>::distribute(groups, Eigen::MatrixXd::Random(square, square));
  (void)sw::matmul(a, b);
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] { benchmark::DoNotOptimize(sw::matmul(a, b)); });
  set_gflops(state, 2.0 * square * square * square);
  state.SetLabel(sw::matmul_plan<Line, ShA, ShB>::describe());
}

using OuterA = TS<S<"x">, R>;
using OuterB = TS<R, R>;
using InnerA = TS<R, S<"x">>;
using InnerB = TS<S<"x">, R>;
BENCHMARK(einsum_rank2<OuterA, OuterB>)->Name("einsum/rank2/Outer")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(matmul_rank2<OuterA, OuterB>)->Name("matmul/Outer")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(einsum_rank2<InnerA, InnerB>)->Name("einsum/rank2/MatchedInner")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(matmul_rank2<InnerA, InnerB>)->Name("matmul/MatchedInner")->UseManualTime()->Unit(benchmark::kMillisecond);

// ---- attention forward + backward -------------------------------------------------------------

constexpr attention::Sizes attention_sizes{2, 512, 512, 8, 64};

/// FLOPs of one forward + backward: 3 projections, 2 batched products and the output projection
/// forward; twice that backward.
constexpr double attention_flops() {
  const auto [b, s, m, h, d] = attention_sizes;
  const double projections = 4.0 * 2.0 * b * s * m * h * d, scores = 2.0 * 2.0 * b * h * s * s * d;
  return 3.0 * (projections + scores);
}

template <typename L>
void attention_pass(benchmark::State& state) {
  auto groups = world_groups();
  const attention::Inputs in(attention_sizes);
  attention::Plain ops;
  (void)attention::forward_backward<L>(groups, in, attention_sizes, ops);
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] {
    benchmark::DoNotOptimize(attention::forward_backward<L>(groups, in, attention_sizes, ops));
  });
  set_gflops(state, attention_flops());
}

using HeadsOverX = attention::Layout<Line, TS<R, R, R>, TS<R, S<"x">, R>, TS<S<"x">, R, R>, TS<R, R, R, P<"x">>>;
using Whole = attention::Layout<Line, TS<R, R, R>, TS<R, R, R>, TS<R, R, R>, TS<R, R, R>>;
BENCHMARK(attention_pass<HeadsOverX>)->Name("attention/heads_over_x")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(attention_pass<Whole>)->Name("attention/unsharded")->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  return shardwise::bench::mpi_benchmark_main(argc, argv, [](int rank) {
    if (rank == 0)
      benchmark::RegisterBenchmark("blas_single_batched", blas_single_batched)->Unit(benchmark::kMillisecond);
  });
}
