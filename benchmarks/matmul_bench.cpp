// matmul_bench: every policy and variant of shardwise::matmul next to the same schedule
// written by hand with raw MPI and Eigen/BLAS, single-rank GEMMs (Eigen's kernel, the BLAS,
// Eigen with OpenMP), and ScaLAPACK pdgemm when built with it. Run under mpiexec with 1 or 2
// ranks (benchmarks/run does both).
//
// Names: shardwise/<Policy>[/<variant>]/<backend>, handwritten/<same>, eigen_single,
// blas_single, eigen_openmp, pdgemm/nb:<NB>/grid:<p>x<q>; each with /m:/n:/k:.
// Counters: GFLOPs (2mnk per second of the slowest rank), bytes_per_rank (the cost model,
// busiest rank), ranks, distributed (1 when A, B and C are each split over all ranks, as
// with pdgemm), peak_rss_MiB (growth of the peak resident set during the benchmark,
// busiest rank) and model_MiB (the schedule's footprint, busiest rank).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <shardwise/shardwise.hpp>

#include "bench_layouts.hpp"
#include "bench_shapes.hpp"
#include <shardwise/bench/mpi_benchmark_main.hpp>
#if SHARDWISE_BENCH_PDGEMM
#include "pdgemm.hpp"
#endif
#if SHARDWISE_BENCH_OPENMP
#include <omp.h>
#endif

namespace sw = shardwise;
using namespace shardwise::bench;  // Line, Grid, Rep, RowsSplit, ColsSplit, Block

namespace {

using shardwise::bench::world_rank;
using shardwise::bench::world_size;

// ---- memory: growth of the peak resident set while a benchmark runs ---------------------

long status_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::size_t length = std::strlen(field);
  while (std::getline(status, line))
    if (line.compare(0, length, field) == 0) return std::atol(line.c_str() + length + 1);
  return 0;
}

/// Resets the peak (Linux: "5" to clear_refs) and remembers the resident size now.
struct PeakMemory {
  long baseline_kib = 0;
  PeakMemory() {
    sw::detail::Workspace::local().release();
    std::ofstream("/proc/self/clear_refs") << "5";
    baseline_kib = status_kib("VmRSS:");
  }
  /// Growth of the peak since construction, in MiB, the largest over ranks.
  double growth_mib() const {
    double mib = static_cast<double>(status_kib("VmHWM:") - baseline_kib) / 1024.0;
    MPI_Allreduce(MPI_IN_PLACE, &mib, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mib;
  }
};

void set_counters(benchmark::State& state, sw::MatmulShape s, double bytes_per_rank, bool distributed,
                  double peak_mib, double model_mib) {
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  state.counters["GFLOPs"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes_per_rank"] = bytes_per_rank;
  state.counters["ranks"] = world_size();
  state.counters["distributed"] = distributed ? 1 : 0;
  if (peak_mib >= 0) state.counters["peak_rss_MiB"] = peak_mib;
  if (model_mib >= 0) state.counters["model_MiB"] = model_mib;
}

std::string shape_suffix(sw::MatmulShape s) {
  return "/m:" + std::to_string(s.m) + "/n:" + std::to_string(s.n) + "/k:" + std::to_string(s.k);
}

const char* backend_name(sw::GemmBackend b) { return b == sw::GemmBackend::blas ? "blas" : "eigen"; }

// ---- shardwise -----------------------------------------------------------------------------

/// One group mesh per mesh type for the whole run (groups are created once, then cached).
template <typename M>
sw::ProcessGroupMesh<M>& groups_for(const M& mesh) {
  static sw::ProcessGroupMesh<M> groups(MPI_COMM_WORLD, mesh);
  return groups;
}

template <typename M, typename ShA, typename ShB, typename ShC, typename V>
void shardwise_matmul(benchmark::State& state, M mesh, sw::MatmulShape s, sw::GemmBackend backend) {
  using Plan = sw::matmul_plan<M, ShA, ShB, ShC, V>;
  auto& groups = groups_for(mesh);
  sw::set_gemm_backend(backend);
  const PeakMemory memory;
  sw::ShardedMatrix<double, M, ShA> a(groups, s.m, s.k);
  sw::ShardedMatrix<double, M, ShB> b(groups, s.k, s.n);
  sw::ShardedMatrix<double, M, typename Plan::output_sharding> c(groups, s.m, s.n);
  a.local().setRandom();
  b.local().setRandom();
  sw::matmul_into(c, a, b, V{});  // warm: groups and scratch exist from here on
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] { sw::matmul_into(c, a, b, V{}); });

  double model = static_cast<double>(Plan::footprint_bytes(mesh, groups.coordinate(), s, sizeof(double)));
  MPI_Allreduce(MPI_IN_PLACE, &model, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  constexpr auto ra = sw::detail::resolve_sharding<M, ShA>(), rb = sw::detail::resolve_sharding<M, ShB>(),
                 rc = sw::detail::resolve_sharding<M, typename Plan::output_sharding>();
  // Every operand cut over every axis: each rank holds 1/P of it.
  auto all_split = [&](const auto& r) {
    int axes = 0;
    for (const auto& d : r.dims) axes += static_cast<int>(d.size());
    return axes == static_cast<int>(M::ndim);
  };
  set_counters(state, s, static_cast<double>(Plan::max_traffic(mesh, s, sizeof(double)).bytes),
               all_split(ra) && all_split(rb) && all_split(rc), memory.growth_mib(), model / (1 << 20));
  sw::set_gemm_backend(sw::has_blas_backend ? sw::GemmBackend::blas : sw::GemmBackend::eigen);
}

// ---- handwritten: the same schedules with raw MPI and Eigen or the BLAS -----------------------

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMatrix = Eigen::MatrixXd;
template <int Order>
using Strided = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;

/// C (order OC) = A * B (+ C), where A and B are strided blocks; Eigen or cblas_dgemm.
template <int OA, int OB, int OC>
void hand_gemm(sw::GemmBackend backend, double* c, long m, long n, long k, const double* a, long lda,
               const double* b, long ldb, bool accumulate) {
#if SHARDWISE_HAS_BLAS
  if (backend == sw::GemmBackend::blas) {
    cblas_dgemm(OC == Eigen::RowMajor ? CblasRowMajor : CblasColMajor, OA == OC ? CblasNoTrans : CblasTrans,
                OB == OC ? CblasNoTrans : CblasTrans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), accumulate ? 1.0 : 0.0, c,
                static_cast<int>(OC == Eigen::ColMajor ? m : n));
    return;
  }
#endif
  (void)backend;
  Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, OC>> cm(c, m, n);
  const Strided<OA> am(a, m, k, Eigen::OuterStride<>(lda));
  const Strided<OB> bm(b, k, n, Eigen::OuterStride<>(ldb));
  if (accumulate) cm.noalias() += am * bm;
  else cm.noalias() = am * bm;
}

/// Shapes divide by the rank counts used (1, 2), so every block has the same size.
struct Blocks {
  long p = world_size(), r = world_rank();
  long next = (r + 1) % p, prev = (r + p - 1) % p;
};

/// Unsharded: every rank multiplies the whole matrices.
void hand_unsharded(benchmark::State& state, sw::MatmulShape s, sw::GemmBackend be) {
  const PeakMemory memory;
  ColMatrix a = ColMatrix::Random(s.m, s.k), b = ColMatrix::Random(s.k, s.n), c(s.m, s.n);
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] {
    hand_gemm<Eigen::ColMajor, Eigen::ColMajor, Eigen::ColMajor>(be, c.data(), s.m, s.n, s.k, a.data(), s.m, b.data(), s.k, false);
  });
  set_counters(state, s, 0, false, memory.growth_mib(), -1);
}

/// MatchedInner: A = [-, x] (column-major), B = [x, -] (row-major); local GEMM gives a partial
/// C, then AllReduce (C replicated) or ReduceScatter along m (C = [x, -]), or that
/// ReduceScatter as a ring overlapped with the GEMM of the next chunk.
enum class Finish { all_reduce, reduce_scatter, reduce_scatter_ring };
void hand_matched(benchmark::State& state, sw::MatmulShape s, sw::GemmBackend be, Finish finish) {
  const Blocks q;
  const long kb = s.k / q.p, mb = s.m / q.p;
  const PeakMemory memory;
  ColMatrix a = ColMatrix::Random(s.m, kb);
  RowMatrix b = RowMatrix::Random(kb, s.n);
  RowMatrix partial(finish == Finish::reduce_scatter_ring ? 0 : s.m, s.n);
  RowMatrix c(finish == Finish::all_reduce ? s.m : mb, s.n);
  std::array<RowMatrix, 3> chunks;
  for (auto& chunk : chunks) chunk.resize(mb, s.n);
  auto chunk_of = [&](long g, double* into) {  // this rank's share of C rows [g mb, (g+1) mb)
    hand_gemm<Eigen::ColMajor, Eigen::RowMajor, Eigen::RowMajor>(be, into, mb, s.n, kb, a.data() + g * mb, s.m,
                                                                   b.data(), s.n, false);
  };
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] {
    if (finish == Finish::reduce_scatter_ring) {
      if (q.p == 1) return chunk_of(0, c.data());
      double *sending = chunks[0].data(), *receiving = chunks[1].data(), *working = chunks[2].data();
      chunk_of(q.prev, sending);
      for (long step = 0; step + 1 < q.p; ++step) {
        const long sent = (q.r - step - 1 + 2 * q.p) % q.p, arriving = (q.r - step - 2 + 2 * q.p) % q.p;
        (void)sent;
        double* into = step + 2 == q.p ? c.data() : working;
        MPI_Request requests[2];
        MPI_Irecv(receiving, static_cast<int>(mb * s.n), MPI_DOUBLE, static_cast<int>(q.prev), 9, MPI_COMM_WORLD, &requests[0]);
        MPI_Isend(sending, static_cast<int>(mb * s.n), MPI_DOUBLE, static_cast<int>(q.next), 9, MPI_COMM_WORLD, &requests[1]);
        chunk_of(arriving, into);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
        Eigen::Map<Eigen::ArrayXd>(into, mb * s.n) += Eigen::Map<const Eigen::ArrayXd>(receiving, mb * s.n);
        working = sending;
        sending = into;
      }
      return;
    }
    hand_gemm<Eigen::ColMajor, Eigen::RowMajor, Eigen::RowMajor>(be, partial.data(), s.m, s.n, kb, a.data(), s.m,
                                                                   b.data(), s.n, false);
    if (finish == Finish::all_reduce)
      MPI_Allreduce(partial.data(), c.data(), static_cast<int>(s.m * s.n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
      MPI_Reduce_scatter_block(partial.data(), c.data(), static_cast<int>(mb * s.n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  });
  set_counters(state, s, 0, finish != Finish::all_reduce, memory.growth_mib(), -1);
}

/// UnmatchedInner: A = [-, x] (column-major) gathered along k; B replicated; C replicated.
void hand_unmatched(benchmark::State& state, sw::MatmulShape s, sw::GemmBackend be) {
  const Blocks q;
  const long kb = s.k / q.p;
  const PeakMemory memory;
  ColMatrix a = ColMatrix::Random(s.m, kb), a_all(s.m, s.k), b = ColMatrix::Random(s.k, s.n), c(s.m, s.n);
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] {
    MPI_Allgather(a.data(), static_cast<int>(s.m * kb), MPI_DOUBLE, a_all.data(), static_cast<int>(s.m * kb),
                  MPI_DOUBLE, MPI_COMM_WORLD);
    hand_gemm<Eigen::ColMajor, Eigen::ColMajor, Eigen::ColMajor>(be, c.data(), s.m, s.n, s.k, a_all.data(), s.m,
                                                                   b.data(), s.k, false);
  });
  set_counters(state, s, 0, false, memory.growth_mib(), -1);
}

/// Outer: A = [x, -], B = [x, -] (row-major) gathered along k, C = [x, -]; or the gather as a
/// ring, each block of B multiplied while the next one travels. `b_col_major` is the Full
/// policy on a P x 1 grid: the same schedule with column-major blocks, B packed before sending.
void hand_outer(benchmark::State& state, sw::MatmulShape s, sw::GemmBackend be, bool ring, bool b_col_major) {
  const Blocks q;
  const long mb = s.m / q.p, kb = s.k / q.p;
  const PeakMemory memory;
  RowMatrix a_rows = b_col_major ? RowMatrix() : RowMatrix::Random(mb, s.k);
  ColMatrix a_cols = b_col_major ? ColMatrix::Random(mb, s.k) : ColMatrix();
  RowMatrix b = RowMatrix::Random(kb, s.n), b_all(ring ? 0 : s.k, s.n), c(mb, s.n);
  ColMatrix b_cols = b_col_major ? ColMatrix::Random(kb, s.n) : ColMatrix();
  std::array<RowMatrix, 2> buffers;
  for (auto& buffer : buffers) buffer.resize(ring ? kb : 0, s.n);
  auto multiply = [&](const double* b_block, long first_k, long depth, bool accumulate) {
    if (b_col_major)
      hand_gemm<Eigen::ColMajor, Eigen::RowMajor, Eigen::ColMajor>(be, c.data(), mb, s.n, depth,
                                                                   a_cols.data() + first_k * mb, mb, b_block, s.n, accumulate);
    else
      hand_gemm<Eigen::RowMajor, Eigen::RowMajor, Eigen::RowMajor>(be, c.data(), mb, s.n, depth,
                                                                   a_rows.data() + first_k, s.k, b_block, s.n, accumulate);
  };
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] {
    if (b_col_major) Eigen::Map<RowMatrix>(b.data(), kb, s.n) = b_cols;  // pack this rank's block row-major
    if (!ring) {
      MPI_Allgather(b.data(), static_cast<int>(kb * s.n), MPI_DOUBLE, b_all.data(), static_cast<int>(kb * s.n),
                    MPI_DOUBLE, MPI_COMM_WORLD);
      return multiply(b_all.data(), 0, s.k, false);
    }
    const double* held = b.data();
    for (long step = 0; step < q.p; ++step) {
      const long block = (q.r - step + q.p) % q.p;
      if (step + 1 < q.p) {
        MPI_Request requests[2];
        double* receive = buffers[static_cast<std::size_t>(step % 2)].data();
        MPI_Irecv(receive, static_cast<int>(kb * s.n), MPI_DOUBLE, static_cast<int>(q.prev), 8, MPI_COMM_WORLD, &requests[0]);
        MPI_Isend(held, static_cast<int>(kb * s.n), MPI_DOUBLE, static_cast<int>(q.next), 8, MPI_COMM_WORLD, &requests[1]);
        multiply(held, block * kb, kb, step > 0);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
        held = receive;
      } else {
        multiply(held, block * kb, kb, step > 0);
      }
    }
  });
  set_counters(state, s, 0, true, memory.growth_mib(), -1);
}

/// SUMMA on a P x 1 grid (the grid a 1-D run has): A panels stay home (a row of one rank),
/// B panels are broadcast down the column from their owner, packed in B's own (column-major)
/// order: the rows of a column-major block are not contiguous, a transpose is not needed.
void hand_summa(benchmark::State& state, sw::MatmulShape s, sw::GemmBackend be, long panel) {
  const Blocks q;
  const long mb = s.m / q.p, kb = s.k / q.p;
  const PeakMemory memory;
  ColMatrix a = ColMatrix::Random(mb, s.k), b = ColMatrix::Random(kb, s.n), c(mb, s.n);
  ColMatrix b_panel(panel, s.n);
  sw::bench::time_collective(state, MPI_COMM_WORLD, [&] {
    for (long begin = 0; begin < s.k; begin += panel) {
      const long width = std::min(panel, std::min(s.k, (begin / kb + 1) * kb) - begin), owner = begin / kb;
      if (owner == q.r) Eigen::Map<ColMatrix>(b_panel.data(), width, s.n) = b.middleRows(begin - owner * kb, width);
      MPI_Bcast(b_panel.data(), static_cast<int>(width * s.n), MPI_DOUBLE, static_cast<int>(owner), MPI_COMM_WORLD);
      hand_gemm<Eigen::ColMajor, Eigen::ColMajor, Eigen::ColMajor>(be, c.data(), mb, s.n, width, a.data() + begin * mb, mb,
                                                                   b_panel.data(), width, begin > 0);
    }
  });
  set_counters(state, s, 0, true, memory.growth_mib(), -1);
}

// ---- single-rank references (on rank 0 while the other ranks sleep) -------------------------

void single(benchmark::State& state, sw::MatmulShape s, int kind) {
  ColMatrix a = ColMatrix::Random(s.m, s.k), b = ColMatrix::Random(s.k, s.n), c(s.m, s.n);
#if SHARDWISE_BENCH_OPENMP
  if (kind == 2) Eigen::setNbThreads(omp_get_num_procs());
#endif
  for (auto _ : state) {
    const double start = MPI_Wtime();
    if (kind == 1) hand_gemm<Eigen::ColMajor, Eigen::ColMajor, Eigen::ColMajor>(sw::GemmBackend::blas, c.data(), s.m, s.n, s.k, a.data(), s.m, b.data(), s.k, false);
    else c.noalias() = a * b;
    state.SetIterationTime(MPI_Wtime() - start);
  }
  Eigen::setNbThreads(1);
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  state.counters["GFLOPs"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ranks"] = 1;
  state.counters["distributed"] = 0;
}

// ---- registration ------------------------------------------------------------------------------

// SHARDWISE_BENCH_SHAPES or the default list (bench_shapes.hpp), as benchmarks/run sets it.
std::vector<sw::MatmulShape> shapes() {
  std::vector<sw::MatmulShape> result;
  for (const auto& [m, n, k] : shardwise::bench::shapes_from_environment()) result.push_back({.m = m, .k = k, .n = n});
  return result;
}

template <typename F>
void add(const std::string& name, sw::MatmulShape s, F&& f) {
  benchmark::RegisterBenchmark((name + shape_suffix(s)).c_str(), std::forward<F>(f))
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

template <typename M, typename ShA, typename ShB, typename ShC, typename V = sw::variant::Standard>
void add_shardwise(const std::string& label, M mesh, sw::MatmulShape s, sw::GemmBackend be) {
  add("shardwise/" + label + "/" + backend_name(be), s,
      [=](benchmark::State& st) { shardwise_matmul<M, ShA, ShB, ShC, V>(st, mesh, s, be); });
}

void register_all() {
  const int p = world_size();
  const Line line{p};
  const Grid grid{p, 1};
  std::vector<sw::GemmBackend> backends{sw::GemmBackend::eigen};
  if (sw::has_blas_backend) backends.insert(backends.begin(), sw::GemmBackend::blas);
  for (const sw::MatmulShape s : shapes()) {
    for (const sw::GemmBackend be : backends) {
      // Eigen's kernel at 4096 adds minutes for little news: only the targets' policies.
      const bool all_policies = be == sw::GemmBackend::blas || s.m * s.n * s.k <= 2048L * 2048 * 2048;
      const std::string b = backend_name(be);
      add_shardwise<Line, RowsSplit, RowsSplit, sw::NaturalOutput>("Outer", line, s, be);
      add("handwritten/Outer/" + b, s, [=](benchmark::State& st) { hand_outer(st, s, be, false, false); });
      add_shardwise<Line, RowsSplit, RowsSplit, sw::NaturalOutput, sw::variant::Ring>("Outer/ring", line, s, be);
      add("handwritten/Outer/ring/" + b, s, [=](benchmark::State& st) { hand_outer(st, s, be, true, false); });
      add_shardwise<Line, ColsSplit, RowsSplit, RowsSplit>("MatchedInner/reduce_scatter", line, s, be);
      add("handwritten/MatchedInner/reduce_scatter/" + b, s,
          [=](benchmark::State& st) { hand_matched(st, s, be, Finish::reduce_scatter); });
      add_shardwise<Line, ColsSplit, RowsSplit, RowsSplit, sw::variant::Ring>("MatchedInner/reduce_scatter_ring", line, s, be);
      add("handwritten/MatchedInner/reduce_scatter_ring/" + b, s,
          [=](benchmark::State& st) { hand_matched(st, s, be, Finish::reduce_scatter_ring); });
      add_shardwise<Grid, Block, Block, sw::NaturalOutput>("Full", grid, s, be);
      add("handwritten/Full/" + b, s, [=](benchmark::State& st) { hand_outer(st, s, be, false, true); });
      add_shardwise<Grid, Block, Block, sw::NaturalOutput, sw::variant::Summa<256>>("Full/summa", grid, s, be);
      add("handwritten/Full/summa/" + b, s, [=](benchmark::State& st) { hand_summa(st, s, be, 256); });
      if (!all_policies) continue;
      add_shardwise<Line, Rep, Rep, sw::NaturalOutput>("Unsharded", line, s, be);
      add("handwritten/Unsharded/" + b, s, [=](benchmark::State& st) { hand_unsharded(st, s, be); });
      add_shardwise<Line, ColsSplit, RowsSplit, sw::NaturalOutput>("MatchedInner/all_reduce", line, s, be);
      add("handwritten/MatchedInner/all_reduce/" + b, s,
          [=](benchmark::State& st) { hand_matched(st, s, be, Finish::all_reduce); });
      add_shardwise<Line, ColsSplit, Rep, sw::NaturalOutput>("UnmatchedInner", line, s, be);
      add("handwritten/UnmatchedInner/" + b, s, [=](benchmark::State& st) { hand_unmatched(st, s, be); });
    }
  }
#if SHARDWISE_BENCH_PDGEMM
  shardwise::bench::register_pdgemm_benchmarks(shardwise::bench::shapes_from_environment());
#endif
}

void register_singles(int rank) {
  if (rank != 0) return;
  for (const sw::MatmulShape s : shapes()) {
    auto add_single = [&](const char* name, int kind) {
      benchmark::RegisterBenchmark((std::string(name) + shape_suffix(s)).c_str(),
                                   [=](benchmark::State& st) { single(st, s, kind); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    };
    add_single("eigen_single", 0);
    if (sw::has_blas_backend) add_single("blas_single", 1);
#if SHARDWISE_BENCH_OPENMP
    add_single("eigen_openmp", 2);
#endif
  }
}

}  // namespace

int main(int argc, char** argv) {
  Eigen::setNbThreads(1);  // one thread per rank; eigen_openmp raises it for itself
  return shardwise::bench::mpi_benchmark_main(argc, argv, [](int rank) {
    register_all();
    register_singles(rank);
  });
}
