// simulate_matmul: shardwise's planned C[m, n] = A[m, k] B[k, n] (fp64) on the ranks of
// MPI_COMM_WORLD, for the plans of plan_choices.hpp (the planner's best, 2-D SUMMA, 2.5D) and
// "time": the planner's choice by predicted time (plan_matmul_any_mesh with a machine, one of
// sw::machines: --machine fat_tree or torus, the platform's; docs/simulation.md). The best
// and time plans may leave ranks idle (allow_idle): a plan then runs on
// a sub-communicator of the first ranks_used() ranks, and the others take no part but the
// timing (they wait at the barrier, and their 0 bytes equal their model's).
//
// The same source is a plain MPI program (mpiexec, real time) and, compiled with smpicxx and
// -DSHARDWISE_SIMULATE=1, a simulated one (smpirun, see simulation/simulate): then the local
// GEMMs charge 2mnk flops to the simulated host, MPI_Wtime is the simulated clock, and
//   --no-compute  skips the GEMMs' arithmetic (the simulated time is unchanged), and
//   --fold        also folds the operands and the workspace onto shared pages (SMPI's shared
//                 malloc), so that thousands of ranks fit in one machine;
//   --measure     the GEMMs compute and charge no flops: for a run where SMPI times the code
//                 between MPI calls (smpi/simulate-computation:yes; simulation/simulate validate).
// A real run (the plain MPI build) also prints each plan's CPU time: the largest over the ranks
// of their process CPU time in the run whose wall time was the best.
// Without --no-compute every rank checks its block of C against its own serial product.
// A and B are filled from global indices, never from rand(): under SMPI all ranks share one
// process and one libc.
//
// For each plan, one line: the mesh, the time of the slowest rank (the best of --reps runs after
// one untimed run), GFLOP/s (2mnk per second), % of the P ranks' peak (under simulation: the
// simulated hosts' speed; idle ranks count), the bytes each rank sent through shardwise's
// communicators (counted at every collective, as the ring algorithms send them) against the
// cost model's bytes for that rank, and the busiest rank's modeled bytes over the
// memory-independent lower bound on P ranks (sw::matmul_lower_bound, words x 8 bytes).
// Exit status 1 when a checked result or a rank's bytes differ from the model.
//
//   simulate_matmul [--m M] [--k K] [--n N] [--plans best,summa,25d,time] [--machine fat_tree|torus] [--reps R]
//                   [--no-compute] [--fold] [--measure]
// --m and --k default to --n (256): `--n N` alone is the square product.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "plan_choices.hpp"
#include "shardwise/comm/counting.hpp"
#include "shardwise/comm/mpi.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/plan/machine.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/process_group_mesh.hpp"

#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
#include <simgrid/host.h>
#endif

namespace {

namespace sw = shardwise;
using sw::detail::block_geometry;
using sw::detail::tensor_axes;

using Cube = sw::Mesh<sw::Axis<"x", sw::dynamic_extent>, sw::Axis<"y", sw::dynamic_extent>,
                      sw::Axis<"z", sw::dynamic_extent>>;

constexpr std::int64_t budget = std::int64_t{4} << 30;  // per rank, as in scaling_model

struct Options {
  std::int64_t m = -1, k = -1, n = 256;  // m and k: n unless given
  std::vector<std::string> plans{"best", "summa", "25d"};
  int reps = 1;
  bool compute = true;
  bool fold = false;
  bool measure = false;
  std::optional<sw::Machine> machine;  // --machine: the "time" plan's
  std::string machine_name;
};

/// A's (which = 0) or B's (which = 1) element (i, j): small multiples of 1/16, so that every
/// product and sum up to n = 2^20 is exact in fp64 and any two correct schedules agree exactly.
double element(int which, std::int64_t i, std::int64_t j) {
  const std::int64_t h = (i * 31 + j * 17 + which * 7) % 23;
  return static_cast<double>(h - 11) / 16.0;
}

/// A block of `rows` x `cols` scalars, row-major: folded (the same pages on every rank) or private.
class Block {
 public:
  Block(std::int64_t rows, std::int64_t cols, bool fold) : count_(std::max<std::int64_t>(1, rows * cols)), fold_(fold) {
    const auto bytes = static_cast<std::size_t>(count_) * sizeof(double);
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
    data_ = static_cast<double*>(fold_ ? SMPI_SHARED_MALLOC(bytes) : std::malloc(bytes));
#else
    data_ = static_cast<double*>(std::malloc(bytes));
#endif
    if (data_ == nullptr) throw std::bad_alloc();
    // Touch a private block, as a real run would. Not a folded one: its pages are SMPI's file
    // in /tmp mapped again and again, and every first write to each mapping is a page fault.
    if (!fold_) std::fill_n(data_, count_, 0.0);
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() {
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
    if (fold_) {
      SMPI_SHARED_FREE(data_);
      return;
    }
#else
    static_cast<void>(fold_);  // only the simulation build folds
#endif
    std::free(data_);
  }
  double* data() const { return data_; }

 private:
  std::int64_t count_;
  bool fold_;
  double* data_ = nullptr;
};

struct Placement {
  std::int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
};

/// This rank's block of a `rows` x `cols` operand stored as `t`.
Placement placement_of(const tensor_axes& t, std::int64_t rows, std::int64_t cols, const block_geometry& geo) {
  const sw::detail::tensor_extents local = sw::detail::local_extents(t, {rows, cols}, geo);
  return {geo.offset(rows, t.dim(0)), geo.offset(cols, t.dim(1)), local[0], local[1]};
}

void fill(const Block& block, const Placement& p, int which) {
  for (std::int64_t i = 0; i < p.rows; ++i)
    for (std::int64_t j = 0; j < p.cols; ++j) block.data()[i * p.cols + j] = element(which, p.row0 + i, p.col0 + j);
}

/// The largest |difference| between this rank's block of C and its serial product (inner extent k).
double check(const Block& c, const Placement& p, std::int64_t k_extent) {
  Eigen::MatrixXd a(p.rows, k_extent), b(k_extent, p.cols);
  for (std::int64_t i = 0; i < p.rows; ++i)
    for (std::int64_t k = 0; k < k_extent; ++k) a(i, k) = element(0, p.row0 + i, k);
  for (std::int64_t k = 0; k < k_extent; ++k)
    for (std::int64_t j = 0; j < p.cols; ++j) b(k, j) = element(1, k, p.col0 + j);
  const Eigen::MatrixXd want = a * b;
  double error = 0;
  for (std::int64_t i = 0; i < p.rows; ++i)
    for (std::int64_t j = 0; j < p.cols; ++j) error = std::max(error, std::abs(c.data()[i * p.cols + j] - want(i, j)));
  return error;
}

/// Flops per second of one rank's host: the simulated host's speed, or 0 when not simulated.
double host_speed() {
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
  return sg_host_get_speed(sg_host_self());
#else
  return 0;
#endif
}

/// This process's CPU time in seconds: a real rank's (under SMPI, the simulator's, and unused).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Rank 0's `value` on every rank (a plain struct of numbers, no pointers).
template <typename T>
void broadcast_bytes(T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  MPI_Bcast(&value, static_cast<int>(sizeof(T)), MPI_BYTE, 0, MPI_COMM_WORLD);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--n" && i + 1 < argc) {
      o.n = std::atoll(argv[++i]);
    } else if (arg == "--m" && i + 1 < argc) {
      o.m = std::atoll(argv[++i]);
    } else if (arg == "--k" && i + 1 < argc) {
      o.k = std::atoll(argv[++i]);
    } else if (arg == "--reps" && i + 1 < argc) {
      o.reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--plans" && i + 1 < argc) {
      o.plans.clear();
      std::string list = argv[++i];
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t end = std::min(list.find(',', start), list.size());
        o.plans.push_back(list.substr(start, end - start));
        start = end + 1;
      }
    } else if (arg == "--no-compute") {
      o.compute = false;
    } else if (arg == "--fold") {
      o.fold = true;
    } else if (arg == "--measure") {
      o.measure = true;
    } else if (arg == "--machine" && i + 1 < argc) {
      o.machine_name = argv[++i];
      if (o.machine_name == "fat_tree") {
        o.machine = sw::machines::simulated_fat_tree;
      } else if (o.machine_name == "torus") {
        o.machine = sw::machines::simulated_torus;
      } else {
        std::fprintf(stderr, "simulate_matmul: unknown machine '%s' (fat_tree, torus)\n", o.machine_name.c_str());
        std::exit(2);
      }
    } else {
      std::fprintf(stderr, "simulate_matmul: unknown argument '%s'\n", argv[i]);
      std::exit(2);
    }
  }
  if (o.m < 0) o.m = o.n;
  if (o.k < 0) o.k = o.n;
  if (o.m < 1 || o.k < 1 || o.n < 1) {
    std::fprintf(stderr, "simulate_matmul: --m, --k and --n must be positive\n");
    std::exit(2);
  }
  if (!o.machine && std::find(o.plans.begin(), o.plans.end(), "time") != o.plans.end()) {
    std::fprintf(stderr, "simulate_matmul: the plan 'time' needs --machine fat_tree or torus\n");
    std::exit(2);
  }
  if (o.measure && !o.compute) {
    std::fprintf(stderr, "simulate_matmul: --measure needs the GEMMs to compute (no --no-compute)\n");
    std::exit(2);
  }
  if (o.fold && o.compute) {
    std::fprintf(stderr, "simulate_matmul: --fold needs --no-compute (folded blocks share their pages)\n");
    std::exit(2);
  }
#if !(defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE)
  if (!o.compute || o.fold || o.measure) {
    std::fprintf(stderr, "simulate_matmul: --no-compute, --fold and --measure need the simulation build (simulation/simulate)\n");
    std::exit(2);
  }
#endif
  return o;
}

/// Runs one plan on the first ranks_of(mesh) ranks; whether its results (when computed) and
/// bytes are right. Rank 0 prints its line.
bool run_plan(const std::string& name, const sw::MatmulChoice& choice, const block_geometry& mesh, const Options& o) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int used = sw::bench::ranks_of(mesh);
  // The idle ranks get MPI_COMM_NULL: they hold no block, send nothing and only time.
  MPI_Comm active = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < used ? 0 : MPI_UNDEFINED, rank, &active);
  const bool busy = active != MPI_COMM_NULL;

  std::int64_t sent = 0, modeled = 0;
  double error = 0, seconds = 1e300, cpu_of_best = 0;
  {
    std::vector<int> extents(3, 1);
    for (int a = 0; a < mesh.ndim; ++a) extents[static_cast<std::size_t>(a)] = mesh.extents[static_cast<std::size_t>(a)];
    const Cube cube{extents[0], extents[1], extents[2]};
    std::optional<sw::ProcessGroupMesh<Cube>> groups;
    std::shared_ptr<sw::CommCounters> counters;
    block_geometry geo;
    if (busy) {
      sw::CountingCommunicator<sw::MpiCommunicator> counting{sw::MpiCommunicator(active)};
      counters = counting.shared_counters();
      groups.emplace(std::move(counting), cube);
      geo = groups->geometry();
    }

    const auto& plan = choice.plan;
    const auto row_major = sw::detail::dim_order::row_major(2);
    const sw::detail::program program = sw::detail::lower(plan.steps, plan.start, sw::detail::matmul_indices,
                                                          choice.panel_width, row_major, row_major, {}, row_major);
    const sw::detail::operand_extents global = sw::detail::matmul_extents({.m = o.m, .k = o.k, .n = o.n});
    Placement pa, pb, pc;
    if (busy) {
      pa = placement_of(plan.start[sw::Operand::A], o.m, o.k, geo);
      pb = placement_of(plan.start[sw::Operand::B], o.k, o.n, geo);
      pc = placement_of(choice.c, o.m, o.n, geo);
    }
    const Block a(pa.rows, pa.cols, o.fold), b(pb.rows, pb.cols, o.fold), c(pc.rows, pc.cols, o.fold);
    if (busy && o.compute) {
      fill(a, pa, 0);
      fill(b, pb, 1);
    }
    auto run = [&] {
      if (busy)
        sw::detail::executor<double, true>(program, groups->state(), global, {a.data(), b.data(), nullptr, c.data()})
            .run();
    };

    // The untimed run: creates the groups and the workspace, and is the one counted and checked.
    if (busy) {
      const sw::Traffic before = counters->total();
      run();
      sent = (counters->total() - before).bytes;
      modeled = sw::detail::schedule_traffic(plan.steps, plan.start, global, geo, sizeof(double), choice.panel_width).bytes;
      if (o.compute) error = check(c, pc, o.k);
    }

    // The best of the runs: a real run on a shared machine is only ever slowed down by the
    // others; a simulated one takes the same time every run.
    for (int r = 0; r < o.reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double cpu_start = cpu_seconds();
      const double start = MPI_Wtime();
      run();
      double elapsed = MPI_Wtime() - start;
      double cpu = cpu_seconds() - cpu_start;
      MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(MPI_IN_PLACE, &cpu, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (elapsed < seconds) seconds = elapsed, cpu_of_best = cpu;
    }
  }  // the groups go before the communicator they were split from
  if (busy) MPI_Comm_free(&active);

  int bytes_equal = sent == modeled ? 1 : 0;
  double worst_error = error;
  std::int64_t most_sent = sent, most_modeled = modeled;
  MPI_Allreduce(MPI_IN_PLACE, &bytes_equal, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &worst_error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &most_sent, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &most_modeled, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  const bool right = worst_error == 0.0;  // exact: see element()
  if (rank == 0) {
    const double flops = 2.0 * static_cast<double>(o.m) * static_cast<double>(o.k) * static_cast<double>(o.n);
    const double gflops = flops / seconds / 1e9;
    const double peak = host_speed() * size / 1e9;
    char peak_text[32] = "-";
    if (peak > 0) std::snprintf(peak_text, sizeof peak_text, "%.1f", 100.0 * gflops / peak);
    const double bound = sw::matmul_lower_bound(o.m, o.k, o.n, size).words * sizeof(double);
    char over_bound[32] = "-";
    if (bound > 0) std::snprintf(over_bound, sizeof over_bound, "%.3f", static_cast<double>(most_modeled) / bound);
    const std::string mesh_text = sw::bench::mesh_text(mesh, size);
    std::printf("| %d | %lld | %lld | %lld | %s | %s | %s | %.6f | %.2f | %s | %.3f | %.3f | %s | %.3f | %s | %s |\n", size,
                static_cast<long long>(o.m), static_cast<long long>(o.k), static_cast<long long>(o.n), name.c_str(),
                mesh_text.c_str(), sw::bench::plan_text(choice).c_str(), seconds, gflops, peak_text,
                static_cast<double>(most_sent) / (1 << 20), static_cast<double>(most_modeled) / (1 << 20),
                bytes_equal ? "yes" : "NO", bound / (1 << 20), over_bound,
                o.compute ? (right ? "exact" : "WRONG") : "not computed");
#if !(defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE)
    std::printf("cpu: %s: %.6f s, the largest CPU time of a rank in the best run\n", name.c_str(), cpu_of_best);
#else
    static_cast<void>(cpu_of_best);  // the simulator's CPU time says nothing of a rank's
#endif
    std::fflush(stdout);
  }
  return bytes_equal && right;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Options o = parse(argc, argv);
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
  sw::detail::simulation::compute() = o.compute;
  sw::detail::simulation::fold() = o.fold;
  sw::detail::simulation::charge() = !o.measure;
#endif
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0) {
    std::printf("| P | m | k | n | plan | mesh | shardings, variant | time s (slowest rank, best run) | GFLOP/s | %% of peak "
                "| MiB sent, busiest rank | model MiB | bytes == model, all ranks | bound MiB | model / bound | C |\n"
                "|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|\n");
    std::fflush(stdout);
  }
  const sw::MatmulProblem problem{{.m = o.m, .k = o.k, .n = o.n}, sizeof(double), budget};
  bool all_right = true;
  for (const std::string& name : o.plans) {
    if (name != "best" && name != "summa" && name != "25d" && name != "time") {
      if (rank == 0) std::fprintf(stderr, "simulate_matmul: unknown plan '%s' (best, summa, 25d, time)\n", name.c_str());
      MPI_Finalize();
      return 2;
    }
    // Rank 0 plans and sends the plan to the others: the search over every mesh takes seconds
    // at P = 4096 (15 s on one core), which every simulated rank repeating would multiply by P.
    block_geometry mesh;
    sw::MatmulChoice choice;
    if (rank == 0) {
      if (name == "best") choice = sw::bench::best_plan(size, problem, mesh, {.allow_idle = true});
      else if (name == "time")
        choice = sw::bench::best_plan(size, problem, mesh, {.allow_idle = true, .machine = o.machine});
      else if (name == "summa") choice = sw::bench::summa_2d(size, problem, mesh);
      else choice = sw::bench::summa_25d(size, problem, mesh);
    }
    broadcast_bytes(choice);
    broadcast_bytes(mesh);
    if (!choice.found || !choice.plan.error.ok() || choice.plan.steps.empty()) {
      // Why: P has no mesh of this kind (2.5D: P = q q c), or none of its plans fits the budget.
      bool has_mesh = name != "25d";
      for (int c = 2; c <= size && !has_mesh; ++c) {
        const int q = static_cast<int>(std::lround(std::sqrt(static_cast<double>(size / c))));
        has_mesh = size % c == 0 && q >= 2 && q * q * c == size;
      }
      if (rank == 0)
        std::printf("| %d | %lld | %lld | %lld | %s | - | %s | | | | | | | | | |\n", size, static_cast<long long>(o.m),
                    static_cast<long long>(o.k), static_cast<long long>(o.n), name.c_str(),
                    has_mesh ? "no plan of this kind fits 4 GiB per rank" : "no plan of this kind: P is no q x q x c");
      continue;
    }
    all_right = run_plan(name, choice, mesh, o) && all_right;
  }
  // The workspace is thread_local: left to its destructor, it would be freed when the rank's
  // thread ends, after MPI_Finalize, where SMPI's shared free crashes.
  sw::detail::Workspace::local().release();
  MPI_Finalize();
  return all_right ? 0 : 1;
}
