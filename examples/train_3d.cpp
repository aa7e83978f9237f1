// 3-D parallel training: data x pipeline x tensor parallelism on Mesh<dp=2, pp=2, tp=2>.
//
//   mpiexec -n 8 train_3d [--steps N] [--gpipe] [--sgd]     (8 MPI ranks)
//   train_3d --virtual [...]                                 (the same, 8 threads in one process)
//
// The model: two FeedForward blocks, y = FFN_1(FFN_0(x)) with FFN(x) = ReLU(x W1 + b1) W2 + b2,
// m = 32, h = 128, regressing a synthetic teacher t = 0.5 tanh(x A) with a mean squared error.
//  - pipeline (pp): FFN_0 on stage 0, FFN_1 on stage 1; the batch runs in R = 4 micro-batches
//    under 1F1B (or GPipe), activations and gradients travel as point-to-point messages;
//  - tensor (tp): each FFN is Megatron tensor parallel (W1 by columns, W2 by rows): one
//    AllReduce over tp per micro-batch forward, one backward (none on stage 0, which needs no dX);
//  - data (dp): each replica trains on half of the 128-row batch; after the micro-batches the
//    gradients are summed over dp in one AllReduce, then every rank's Adam (or SGD) updates
//    its shards.
// Every step prints the loss; at the end the final weights are compared with a serial Eigen
// run of the same model, data and optimizer: `max_abs_diff_vs_serial=<value>`. The counted
// communication of every rank in every step is checked against the model (FeedForward plan +
// pipeline messages + the dp and loss AllReduces). Exit status 1 if the difference exceeds
// 1e-10 or any count differs from its model.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <shardwise/comm/virtual_cluster.hpp>  // --virtual: the same program on threads
#include <shardwise/shardwise.hpp>

namespace sw = shardwise;
using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;
using Mesh3 = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"pp", 2>, sw::Axis<"tp", 2>>;
using Ffn = sw::FeedForward<double, Mesh3, TS<R, R, R>, TS<R, S<"tp">>, TS<S<"tp">, R>>;  // MegatronTP
using Stage = sw::FeedForwardStage<Ffn>;
using Matrix = Eigen::MatrixXd;
using Vector = Eigen::VectorXd;

namespace {

constexpr std::int64_t batch = 128, m = 32, h = 128;  // micro-batch messages of 4 KiB: past MPI's eager limit
constexpr int micro_batches = 4, stages = 2;
constexpr double tolerance = 1e-10;

struct Options {
  bool virtual_cluster = false;
  bool gpipe = false;
  bool sgd = false;
  int steps = 10;
};

Matrix uniform(std::int64_t rows, std::int64_t cols, std::uint64_t seed, double lo, double hi) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  return Matrix::NullaryExpr(rows, cols, [&] { return u(engine); });
}

/// One FeedForward's parameters (and gradients), whole: the serial model, and the initial values.
struct Block {
  Matrix w1, w2, dw1, dw2;
  Vector b1, b2, db1, db2;
};

std::vector<Block> initial_model() {
  std::vector<Block> blocks;
  const double bound = std::sqrt(6.0 / static_cast<double>(m + h));
  for (std::uint64_t s = 0; s < stages; ++s)
    blocks.push_back({uniform(m, h, 10 + s, -bound, bound), uniform(h, m, 20 + s, -bound, bound), {}, {},
                      uniform(h, 1, 30 + s, 0.0, 0.1), Vector::Zero(m), {}, {}});
  return blocks;
}

struct Data {
  Matrix x = uniform(batch, m, 1, -1.0, 1.0);
  Matrix t = (0.5 * (x * uniform(m, m, 2, -0.5, 0.5)).array().tanh()).matrix();
};

/// SGD or Adam behind one interface (one state per parameter list, like every rank's own).
struct Optimizer {
  bool sgd;
  sw::Sgd<double> plain{0.1};
  sw::Adam<double> adam{1e-2};
  void step(std::span<const sw::ParameterRef<double>> parameters) {
    if (sgd) plain.step(parameters);
    else adam.step(parameters);
  }
};

template <typename M>
std::span<double> flat(M& matrix) {
  return {matrix.data(), static_cast<std::size_t>(matrix.size())};
}

/// The reference: the same two blocks trained serially on the whole batch. Returns the losses.
std::vector<double> train_serially(std::vector<Block>& blocks, const Data& data, const Options& options) {
  std::vector<Optimizer> optimizers(stages, Optimizer{options.sgd});
  const double scale = 1.0 / static_cast<double>(batch * m);
  std::vector<double> losses;
  for (int step = 0; step < options.steps; ++step) {
    std::vector<Matrix> input{data.x}, hidden;
    for (const Block& b : blocks) {
      hidden.push_back(((input.back() * b.w1).rowwise() + b.b1.transpose()).cwiseMax(0.0));
      input.push_back((hidden.back() * b.w2).rowwise() + b.b2.transpose());
    }
    losses.push_back(scale * (input.back() - data.t).squaredNorm());
    Matrix grad = 2.0 * scale * (input.back() - data.t);
    for (std::size_t s = stages; s-- > 0;) {
      Block& b = blocks[s];
      b.db2 = grad.colwise().sum().transpose();
      b.dw2 = hidden[s].transpose() * grad;
      const Matrix dh = ((grad * b.w2.transpose()).array() * (hidden[s].array() > 0.0).cast<double>()).matrix();
      b.db1 = dh.colwise().sum().transpose();
      b.dw1 = input[s].transpose() * dh;
      grad = dh * b.w1.transpose();
    }
    for (std::size_t s = 0; s < stages; ++s) {
      Block& b = blocks[s];
      const std::array<sw::ParameterRef<double>, 4> parameters{
          sw::ParameterRef<double>{flat(b.w1), flat(b.dw1)}, sw::ParameterRef<double>{flat(b.b1), flat(b.db1)},
          sw::ParameterRef<double>{flat(b.w2), flat(b.dw2)}, sw::ParameterRef<double>{flat(b.b2), flat(b.db2)}};
      optimizers[s].step(parameters);
    }
  }
  return losses;
}

/// What the model says the rank at `coordinate` sends in one step.
template <typename P>
sw::Traffic modeled_step_traffic(const Mesh3& mesh, const Mesh3::coordinate_type& coordinate,
                                 std::int64_t local_parameters, sw::Traffic* tensor, sw::Traffic* pipeline,
                                 sw::Traffic* data) {
  const int stage = coordinate[1], replica = coordinate[0];
  const std::int64_t rows = sw::detail::block_size(batch, 2, replica);
  *tensor = {};
  for (int r = 0; r < micro_batches; ++r) {
    const sw::FfnShape shape{.b = sw::detail::block_size(rows, micro_batches, r), .s = 1, .m = m, .h = h};
    *tensor += Ffn::plan::forward_traffic(mesh, coordinate, shape, sizeof(double)).total();
    *tensor += Ffn::plan::backward_traffic(mesh, coordinate, shape, sizeof(double), stage > 0).total();
  }
  *pipeline = sw::PipelineEngine<P, Stage>::send_traffic(stage, rows, m, m, sizeof(double));
  *data = sw::detail::ring_all_reduce_traffic(local_parameters, 2, replica, sizeof(double));
  const sw::Traffic loss = sw::detail::ring_all_reduce_traffic(1, mesh.size(), mesh.ravel(coordinate), sizeof(double));
  return *tensor + *pipeline + *data + loss;
}

/// One training run on this rank; `comm` spans the 8 ranks (MPI or the virtual cluster, type-erased
/// so that the program compiles the run once per schedule, not once per backend as well).
template <typename P>
int train(sw::AnyCommunicator comm, const Options& options) {
  auto counters = std::make_shared<sw::CommCounters>();
  sw::ParallelContext<Mesh3> context(
      sw::ProcessGroupMesh<Mesh3>(sw::CountingCommunicator<sw::AnyCommunicator>(std::move(comm), counters)),
      {{sw::ParallelMode::data, {"dp"}}, {sw::ParallelMode::pipeline, {"pp"}}, {sw::ParallelMode::tensor, {"tp"}}});
  auto& world = context.group(sw::ParallelMode::global);
  auto& data_group = context.group(sw::ParallelMode::data);
  auto& pipeline_group = context.group(sw::ParallelMode::pipeline);
  (void)context.group(sw::ParallelMode::tensor);  // created up front, by every rank in the same order

  const int stage = context.local_rank(sw::ParallelMode::pipeline);
  const int replica = context.local_rank(sw::ParallelMode::data);
  const bool report = context.local_rank(sw::ParallelMode::tensor) == 0 && stage == stages - 1;
  const std::vector<Block> start = initial_model();
  const Data data;

  // My stage's block, Megatron-sharded over tp; my replica's rows of the batch.
  const Block& mine = start[static_cast<std::size_t>(stage)];
  Ffn ffn = Ffn::from_global(context.groups(), mine.w1, mine.b1, mine.w2, mine.b2);
  Stage module(ffn);
  sw::PipelineEngine<P, Stage> engine(pipeline_group, module);
  const std::int64_t first_row = sw::detail::block_begin(batch, 2, replica);
  const std::int64_t rows = sw::detail::block_size(batch, 2, replica);
  const sw::PipelineMatrix<double> x = data.x.middleRows(first_row, rows), t = data.t.middleRows(first_row, rows);
  Optimizer optimizer{options.sgd};
  std::vector<double> gradient_buffer;
  const double scale = 1.0 / static_cast<double>(batch * m);

  std::vector<Block> serial = start;
  const std::vector<double> serial_losses = train_serially(serial, data, options);

  std::int64_t local_parameters = 0;
  for (const auto& p : ffn.parameters()) local_parameters += static_cast<std::int64_t>(p.value.size());
  sw::Traffic tensor, pipeline, data_parallel;
  const sw::Traffic modeled = modeled_step_traffic<P>(context.mesh(), context.groups().coordinate(), local_parameters,
                                                      &tensor, &pipeline, &data_parallel);
  sw::Traffic measured_first;
  bool counts_match = true;

  if (context.is_master())
    std::printf("train_3d: Mesh<dp=2, pp=2, tp=2> on %s, %s, %d micro-batches, %s; %s\n",
                options.virtual_cluster ? "the virtual cluster (8 threads)" : "8 MPI ranks", P::schedule_type::name.data(),
                micro_batches, options.sgd ? "SGD (lr 0.1)" : "Adam (lr 1e-2)", Ffn::describe().c_str());
  for (int step = 0; step < options.steps; ++step) {
    const sw::Traffic before = counters->total();
    ffn.zero_grad();
    double loss = engine.run(rows, x, t, [&](int) { return scale; }, [](int) {});
    sw::all_reduce_gradients<double>(data_group, ffn.parameters(), gradient_buffer);  // one AllReduce over dp
    optimizer.step(ffn.parameters());
    double reported = report ? loss : 0.0;  // the batch loss: the last stages' share of each replica
    world.all_reduce(std::span<double>(&reported, 1));
    const sw::Traffic sent = counters->total() - before;
    if (step == 0) measured_first = sent;
    counts_match = counts_match && sent == modeled;
    if (context.is_master())
      std::printf("step %d loss %.10f (serial %.10f)\n", step + 1, reported, serial_losses[static_cast<std::size_t>(step)]);
  }

  // This rank's shards against the serial weights.
  const Block& want = serial[static_cast<std::size_t>(stage)];
  const auto& w = ffn.weights();
  double diff = 0;
  diff = std::max(diff, (w.w1.local() - want.w1.middleCols(w.w1.col_offset(), w.w1.local_cols())).cwiseAbs().maxCoeff());
  diff = std::max(diff, (w.b1.local().transpose() - want.b1.segment(w.b1.col_offset(), w.b1.local_cols())).cwiseAbs().maxCoeff());
  diff = std::max(diff, (w.w2.local() - want.w2.middleRows(w.w2.row_offset(), w.w2.local_rows())).cwiseAbs().maxCoeff());
  diff = std::max(diff, (w.b2.local().transpose() - want.b2).cwiseAbs().maxCoeff());
  world.all_reduce(std::span<double>(&diff, 1), sw::ReduceOp::max);

  // Communication per step, every rank, measured against the model.
  std::int64_t mine_counts[7] = {measured_first.bytes, measured_first.messages, modeled.bytes, modeled.messages,
                                 tensor.bytes, pipeline.bytes, data_parallel.bytes};
  std::vector<std::int64_t> all(7 * 8);
  world.all_gather(std::span<const std::int64_t>(mine_counts, 7), all);
  int match = counts_match ? 1 : 0;
  world.all_reduce(std::span<int>(&match, 1), sw::ReduceOp::min);
  if (context.is_master()) {
    std::printf("communication per step (counted vs modeled; model = tp AllReduces + pp messages + dp AllReduce + loss):\n");
    for (int r = 0; r < 8; ++r) {
      const std::int64_t* c = &all[static_cast<std::size_t>(7 * r)];
      const auto at = context.mesh().unravel(r);
      std::printf("  rank %d (dp %d, pp %d, tp %d): counted %lld B / %lld msgs, modeled %lld B / %lld msgs "
                  "[tp %lld B, pp %lld B, dp %lld B, loss %lld B]\n",
                  r, at[0], at[1], at[2], static_cast<long long>(c[0]), static_cast<long long>(c[1]),
                  static_cast<long long>(c[2]), static_cast<long long>(c[3]), static_cast<long long>(c[4]),
                  static_cast<long long>(c[5]), static_cast<long long>(c[6]),
                  static_cast<long long>(c[2] - c[4] - c[5] - c[6]));
    }
    std::printf("every rank, every step: counted %s modeled\n", match ? "==" : "!=");
    std::printf("max_abs_diff_vs_serial=%.3e\n", diff);
  }
  return diff <= tolerance && match ? 0 : 1;
}

int train(sw::AnyCommunicator comm, const Options& options) {
  if (options.gpipe) return train<sw::Pipeline<stages, micro_batches, sw::schedule::GPipe>>(std::move(comm), options);
  return train<sw::Pipeline<stages, micro_batches, sw::schedule::OneFOneB>>(std::move(comm), options);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--virtual") == 0) options.virtual_cluster = true;
    else if (std::strcmp(argv[i], "--gpipe") == 0) options.gpipe = true;
    else if (std::strcmp(argv[i], "--sgd") == 0) options.sgd = true;
    else if (std::strcmp(argv[i], "--steps") == 0 && i + 1 < argc) options.steps = std::atoi(argv[++i]);
    else throw std::invalid_argument(std::string("unknown argument '") + argv[i] +
                                     "'; use --virtual, --steps N, --gpipe, --sgd");
  }
  if (options.steps < 1) throw std::invalid_argument("--steps needs a positive number");
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_3d: %s\n", e.what());
    return 2;
  }
  // The model is the training's own traffic: the library's agreement checks (one small
  // all-reduce per call, see docs/runtime.md) stay out of the count. Set before any rank runs:
  // the ranks must check at the same level (on the virtual cluster they share it).
  sw::check_level() = sw::CheckLevel::local;
  if (options.virtual_cluster) {
    int status = 0;
    try {
      sw::run_virtual_cluster(8, [&](sw::VirtualCommunicator& comm) {
        const int rank = comm.rank();
        const int result = train(sw::AnyCommunicator(std::move(comm)), options);
        if (rank == 0) status = result;
      });
    } catch (const std::exception& e) {
      std::fprintf(stderr, "train_3d: %s\n", e.what());
      return 1;
    }
    return status;
  }
  // An exception on any rank ends every rank with its message (MPI_Abort), rather than leaving
  // the others waiting in a collective.
  sw::MpiEnvironment mpi(argc, argv);
  int status = 0;
  {
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size != 8) {
      if (rank == 0)
        std::fprintf(stderr, "train_3d: needs 8 MPI ranks (dp=2 x pp=2 x tp=2), got %d; run mpiexec -n 8 train_3d, "
                             "or train_3d --virtual\n", size);
      status = 2;
    } else {
      status = train(sw::AnyCommunicator(sw::MpiCommunicator(MPI_COMM_WORLD)), options);
    }
  }
  return status;
}
