// Multi-head self-attention, forward and backward, with heads split over a tensor-parallel
// axis and the batch over a data-parallel axis: every product is an sw::einsum whose
// communication the compiler derives from the shardings.
//
//   mpiexec -n 4 attention      (4 MPI ranks: dp = 2 x tp = 2)
//   attention --virtual         (the same program, 4 threads in one process)
//
//   Q, K, V = X Wq, X Wk, X Wv       "bqm,mhd->bhqd"   X[b, s, m] split over dp, W[m, h, d] over tp: local
//   S = Q K^T / sqrt(d)              "bhqd,bhkd->bhqk" batch b, h split the same: local
//   P = softmax over k               element-wise on this rank's block (it holds whole rows)
//   O = P V                          "bhqk,bhkd->bhqd" local
//   Y = O Wo                         "bhqd,hdm->bqm"   h, d contracted, h split over tp: AllReduce over tp
// and backward from dY = Y - T (the loss 0.5 |Y - T|^2): dWo, dWq, dWk, dWv contract the
// batch, split over dp: one AllReduce over dp each; dX sums three products whose heads are
// split over tp: each is asked for as Partial<"tp">, the three are added locally, and one
// reduce() finishes the sum (one AllReduce over tp instead of three).
//
// The result and every gradient are compared with a serial Eigen computation
// (max_abs_diff_vs_serial), and every rank's counted traffic with the sum of the plans' cost
// models. Exit status 1 if the difference exceeds 1e-10 or a count differs from its model.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <shardwise/comm/virtual_cluster.hpp>  // --virtual: the same program on threads
#include <shardwise/tensor.hpp>

namespace sw = shardwise;
using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <sw::fixed_string... N> using P = sw::Partial<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;
using Mesh2 = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"tp", 2>>;

// Shardings: activations by batch over dp, heads over tp; projections by heads over tp.
using Act = TS<S<"dp">, R, R>;           // X, Y, dY, dX: [b, s, m]
using Heads = TS<S<"dp">, S<"tp">, R, R>;  // Q, K, V, O and gradients: [b, h, s, d]; S, P: [b, h, q, k]
using Proj = TS<R, S<"tp">, R>;          // Wq, Wk, Wv: [m, h, d]
using Out = TS<S<"tp">, R, R>;           // Wo: [h, d, m]
template <int N> using Tensor = Eigen::Tensor<double, N, Eigen::RowMajor>;

namespace {

constexpr Eigen::Index batch = 4, seq = 12, model = 16, heads = 4, head_dim = 8;
constexpr double tolerance = 1e-10;

template <int N>
Tensor<N> uniform(const std::array<Eigen::Index, N>& dims, std::uint64_t seed, double scale) {
  Tensor<N> t(dims);
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(-scale, scale);
  for (Eigen::Index i = 0; i < t.size(); ++i) t.data()[i] = u(engine);
  return t;
}

struct Inputs {
  Tensor<3> x = uniform<3>({batch, seq, model}, 1, 1.0), target = uniform<3>({batch, seq, model}, 2, 1.0);
  Tensor<3> wq = uniform<3>({model, heads, head_dim}, 3, 0.3), wk = uniform<3>({model, heads, head_dim}, 4, 0.3);
  Tensor<3> wv = uniform<3>({model, heads, head_dim}, 5, 0.3), wo = uniform<3>({heads, head_dim, model}, 6, 0.3);
};

/// The outputs compared with the serial run.
struct Results {
  Tensor<3> y, dx, dwq, dwk, dwv, dwo;
};

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<RowMatrix>;
using ConstMap = Eigen::Map<const RowMatrix>;

/// Rows of length `cols` of a row-major block, as a matrix (softmax works on whole rows).
template <typename T>
Map rows_of(T& t, Eigen::Index cols) {
  return {t.data(), t.size() / cols, cols};
}

// ---- serial reference: per batch and head, plain Eigen matrices ---------------------------------

Results serial(const Inputs& in) {
  const Eigen::Index hd = heads * head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const ConstMap wq(in.wq.data(), model, hd), wk(in.wk.data(), model, hd), wv(in.wv.data(), model, hd);
  const ConstMap wo(in.wo.data(), hd, model);
  Results r{Tensor<3>(batch, seq, model), Tensor<3>(batch, seq, model), Tensor<3>(model, heads, head_dim),
            Tensor<3>(model, heads, head_dim), Tensor<3>(model, heads, head_dim), Tensor<3>(heads, head_dim, model)};
  Map dwq(r.dwq.data(), model, hd), dwk(r.dwk.data(), model, hd), dwv(r.dwv.data(), model, hd), dwo(r.dwo.data(), hd, model);
  dwq.setZero(), dwk.setZero(), dwv.setZero(), dwo.setZero();
  for (Eigen::Index b = 0; b < batch; ++b) {
    const ConstMap x(in.x.data() + b * seq * model, seq, model), t(in.target.data() + b * seq * model, seq, model);
    const RowMatrix q = x * wq, k = x * wk, v = x * wv;
    RowMatrix o(seq, hd), dq(seq, hd), dk(seq, hd), dv(seq, hd);
    std::vector<RowMatrix> p(heads);
    for (Eigen::Index h = 0; h < heads; ++h) {
      RowMatrix s = scale * q.middleCols(h * head_dim, head_dim) * k.middleCols(h * head_dim, head_dim).transpose();
      s = (s.colwise() - s.rowwise().maxCoeff()).array().exp().matrix();
      p[h] = s.array().colwise() / s.rowwise().sum().array();
      o.middleCols(h * head_dim, head_dim) = p[h] * v.middleCols(h * head_dim, head_dim);
    }
    Map y(r.y.data() + b * seq * model, seq, model);
    y = o * wo;
    const RowMatrix dy = y - t, d_o = dy * wo.transpose();
    dwo += o.transpose() * dy;
    for (Eigen::Index h = 0; h < heads; ++h) {
      const auto cols = [&](const RowMatrix& m) { return m.middleCols(h * head_dim, head_dim); };
      const RowMatrix dp = cols(d_o) * cols(v).transpose();
      dv.middleCols(h * head_dim, head_dim) = p[h].transpose() * cols(d_o);
      const RowMatrix ds = scale * (p[h].array() * (dp.colwise() - (dp.array() * p[h].array()).rowwise().sum().matrix()).array()).matrix();
      dq.middleCols(h * head_dim, head_dim) = ds * cols(k);
      dk.middleCols(h * head_dim, head_dim) = ds.transpose() * cols(q);
    }
    dwq += x.transpose() * dq, dwk += x.transpose() * dk, dwv += x.transpose() * dv;
    Map(r.dx.data() + b * seq * model, seq, model) = dq * wq.transpose() + dk * wk.transpose() + dv * wv.transpose();
  }
  return r;
}

// ---- the sharded run --------------------------------------------------------------------------

/// Every einsum of the pass and its plan's traffic model, added up as the pass runs.
struct Ledger {
  Ledger(const Mesh2& mesh_, const Mesh2::coordinate_type& at_) : mesh(mesh_), at(at_) {}
  const Mesh2& mesh;
  Mesh2::coordinate_type at;
  sw::IndexExtents extents{{'b', batch}, {'q', seq}, {'k', seq}, {'m', model}, {'h', heads}, {'d', head_dim}};
  sw::Traffic modeled;  ///< what the plans say this rank sends
  sw::Traffic counted;  ///< what it did send (CountingCommunicator), the final gathers aside
  std::vector<std::string> lines;

  template <sw::fixed_string Spec, typename ShC = sw::NaturalOutput, typename A, typename B>
  auto einsum(const A& a, const B& b) {
    using Plan = sw::einsum_plan<Spec, Mesh2, typename A::sharding, typename B::sharding, ShC>;
    modeled += Plan::traffic(mesh, at, extents, sizeof(double));
    lines.push_back(std::string(Spec.view()) + "  " + Plan::describe());
    return sw::einsum<Spec, ShC>(a, b);
  }
  template <typename T>
  auto reduce(const T& t) {
    auto reduced = sw::reduce(t);
    modeled += sw::reshard_plan<Mesh2, typename T::sharding, typename decltype(reduced)::sharding>::traffic(
        mesh, at, t.global_extents(), sizeof(double));
    lines.push_back("reduce dX  " + sw::reshard_plan<Mesh2, typename T::sharding, typename decltype(reduced)::sharding>::describe());
    return reduced;
  }
};

/// Softmax over the last index of this rank's block of S (its rows are whole).
void softmax_rows(Tensor<4>& s, double scale) {
  Map m = rows_of(s, seq);
  m *= scale;
  m = (m.colwise() - m.rowwise().maxCoeff()).array().exp().matrix();
  m = m.array().colwise() / m.rowwise().sum().array();
}

Results sharded(sw::ProcessGroupMesh<Mesh2>& groups, const Inputs& in, const sw::CommCounters& counters, Ledger& ledger) {
  const sw::Traffic before = counters.total();
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const auto x = sw::ShardedTensor<double, Mesh2, Act>::distribute(groups, in.x);
  const auto target = sw::ShardedTensor<double, Mesh2, Act>::distribute(groups, in.target);
  const auto wq = sw::ShardedTensor<double, Mesh2, Proj>::distribute(groups, in.wq);
  const auto wk = sw::ShardedTensor<double, Mesh2, Proj>::distribute(groups, in.wk);
  const auto wv = sw::ShardedTensor<double, Mesh2, Proj>::distribute(groups, in.wv);
  const auto wo = sw::ShardedTensor<double, Mesh2, Out>::distribute(groups, in.wo);

  // Forward.
  const auto q = ledger.einsum<"bqm,mhd->bhqd">(x, wq);
  const auto k = ledger.einsum<"bkm,mhd->bhkd">(x, wk);
  const auto v = ledger.einsum<"bkm,mhd->bhkd">(x, wv);
  auto p = ledger.einsum<"bhqd,bhkd->bhqk">(q, k);
  softmax_rows(p.local(), scale);
  const auto o = ledger.einsum<"bhqk,bhkd->bhqd">(p, v);
  const auto y = ledger.einsum<"bhqd,hdm->bqm">(o, wo);  // AllReduce over tp

  // Backward from dY = Y - T.
  auto dy = sw::ShardedTensor<double, Mesh2, Act>(groups, y.extents());
  dy.local() = y.local() - target.local();
  const auto d_o = ledger.einsum<"bqm,hdm->bhqd">(dy, wo);
  const auto dwo = ledger.einsum<"bhqd,bqm->hdm">(o, dy);  // AllReduce over dp
  auto dp = ledger.einsum<"bhqd,bhkd->bhqk">(d_o, v);
  const auto dv = ledger.einsum<"bhqk,bhqd->bhkd">(p, d_o);
  {  // dS = P * (dP - rowsum(dP * P)) / sqrt(d), in place of dP
    Map ds = rows_of(dp.local(), seq);
    const Map pm = rows_of(p.local(), seq);
    const Eigen::VectorXd dot = (ds.array() * pm.array()).rowwise().sum();
    ds = scale * (pm.array() * (ds.colwise() - dot).array()).matrix();
  }
  const auto dq = ledger.einsum<"bhqk,bhkd->bhqd">(dp, k);
  const auto dk = ledger.einsum<"bhqk,bhqd->bhkd">(dp, q);
  const auto dwq = ledger.einsum<"bqm,bhqd->mhd">(x, dq);  // AllReduce over dp, each
  const auto dwk = ledger.einsum<"bkm,bhkd->mhd">(x, dk);
  const auto dwv = ledger.einsum<"bkm,bhkd->mhd">(x, dv);
  using Pending = TS<S<"dp">, R, R, P<"tp">>;  // dX's three terms, their sums over heads left pending
  auto dx_partial = ledger.einsum<"bhqd,mhd->bqm", Pending>(dq, wq);
  dx_partial.local() += ledger.einsum<"bhkd,mhd->bkm", Pending>(dk, wk).local();
  dx_partial.local() += ledger.einsum<"bhkd,mhd->bkm", Pending>(dv, wv).local();
  const auto dx = ledger.reduce(dx_partial);  // one AllReduce over tp for all three
  ledger.counted = counters.total() - before;

  return {y.to_global(), dx.to_global(), dwq.to_global(), dwk.to_global(), dwv.to_global(), dwo.to_global()};
}

double max_abs_diff(const Tensor<3>& a, const Tensor<3>& b) {
  double worst = 0;
  for (Eigen::Index i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a.data()[i] - b.data()[i]));
  return worst;
}

/// One forward and backward pass on this rank; `comm` spans the 4 ranks (MPI or the virtual
/// cluster, type-erased so that the program is compiled once).
int run(sw::AnyCommunicator comm, bool on_threads) {
  auto counters = std::make_shared<sw::CommCounters>();
  sw::ProcessGroupMesh<Mesh2> groups(sw::CountingCommunicator<sw::AnyCommunicator>(std::move(comm), counters));
  const Inputs in;
  Ledger ledger(groups.mesh(), groups.coordinate());
  const Results got = sharded(groups, in, *counters, ledger);
  const sw::Traffic counted = ledger.counted;

  const Results want = serial(in);
  double diff = 0;
  for (const auto& [a, b] : {std::pair{&got.y, &want.y}, {&got.dx, &want.dx}, {&got.dwq, &want.dwq},
                             {&got.dwk, &want.dwk}, {&got.dwv, &want.dwv}, {&got.dwo, &want.dwo}})
    diff = std::max(diff, max_abs_diff(*a, *b));

  auto& world = groups.world();
  std::int64_t mine[4] = {counted.bytes, counted.messages, ledger.modeled.bytes, ledger.modeled.messages};
  std::vector<std::int64_t> all(4 * static_cast<std::size_t>(world.size()));
  world.all_gather(std::span<const std::int64_t>(mine, 4), all);
  int match = counted == ledger.modeled ? 1 : 0;
  world.all_reduce(std::span<int>(&match, 1), sw::ReduceOp::min);
  world.all_reduce(std::span<double>(&diff, 1), sw::ReduceOp::max);
  if (groups.rank() == 0) {
    std::printf("attention: b=%lld s=%lld m=%lld heads=%lld d=%lld on Mesh<dp=2, tp=2>, %s\n",
                static_cast<long long>(batch), static_cast<long long>(seq), static_cast<long long>(model),
                static_cast<long long>(heads), static_cast<long long>(head_dim),
                on_threads ? "the virtual cluster (4 threads)" : "4 MPI ranks");
    for (const std::string& line : ledger.lines) std::printf("  %s\n", line.c_str());
    for (int r = 0; r < world.size(); ++r) {
      const std::int64_t* c = &all[static_cast<std::size_t>(4 * r)];
      const auto at = groups.mesh().unravel(r);
      std::printf("rank %d (dp %d, tp %d): counted_bytes=%lld (%lld msgs) modeled_bytes=%lld (%lld msgs)\n", r, at[0],
                  at[1], static_cast<long long>(c[0]), static_cast<long long>(c[1]), static_cast<long long>(c[2]),
                  static_cast<long long>(c[3]));
    }
    std::printf("every rank: counted %s modeled\n", match ? "==" : "!=");
    std::printf("max_abs_diff_vs_serial=%.3e\n", diff);
  }
  return diff <= tolerance && match ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool on_threads = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--virtual") == 0) {
      on_threads = true;
    } else {
      std::fprintf(stderr, "attention: unknown argument '%s'; use --virtual or nothing\n", argv[i]);
      return 2;
    }
  }
  // The model is the pass's own traffic: the library's agreement checks (one small all-reduce
  // per call, docs/runtime.md) stay out of the count. Set before any rank runs.
  sw::check_level() = sw::CheckLevel::local;
  if (on_threads) {
    int status = 0;
    sw::run_virtual_cluster(4, [&](sw::VirtualCommunicator& comm) {
      const int rank = comm.rank();
      const int result = run(sw::AnyCommunicator(std::move(comm)), true);
      if (rank == 0) status = result;
    });
    return status;
  }
  // An exception on any rank ends every rank with its message (MPI_Abort): no rank waits forever.
  sw::MpiEnvironment mpi(argc, argv);
  int size = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (size != 4) {
    if (rank == 0)
      std::fprintf(stderr, "attention: needs 4 MPI ranks (dp=2 x tp=2), got %d; run mpiexec -n 4 attention, or "
                           "attention --virtual\n", size);
    return 2;
  }
  return run(sw::AnyCommunicator(sw::MpiCommunicator(MPI_COMM_WORLD)), false);
}
