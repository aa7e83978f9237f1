// Multi-head self-attention, forward and backward, with heads split over a tensor-parallel
// axis and the batch over a data-parallel axis: every product is an sw::einsum whose
// communication the compiler derives from the shardings (the pass: examples/attention.hpp).
//
//   mpiexec -n 4 attention      (4 MPI ranks: dp = 2 x tp = 2)
//   attention --virtual         (the same program, 4 threads in one process)
//
// Shardings: X, Y, dX [b, s, m] by batch over dp; Wq, Wk, Wv [m, h, d] by heads over tp; Wo
// [h, d, m] by heads over tp. Then Q, K, V, S, P, O [b, h, ., .] come out split over (dp, tp)
// and every product per head is local; Y's sum over heads is one AllReduce over tp; each weight
// gradient sums over the batch, one AllReduce over dp; dX's three terms are kept Partial over
// tp, added, and reduced once (one AllReduce instead of three).
//
// The output and every gradient are compared with a serial Eigen computation
// (max_abs_diff_vs_serial), and every rank's counted traffic with the sum of the plans' cost
// models. Exit status 1 if the difference exceeds 1e-10 or a count differs from its model.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <shardwise/comm/virtual_cluster.hpp>  // --virtual: the same program on threads
#include <shardwise/tensor.hpp>

#include "attention.hpp"

namespace sw = shardwise;
using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <sw::fixed_string... N> using P = sw::Partial<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;
using Mesh2 = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"tp", 2>>;
using Layout = attention::Layout<Mesh2,
                                 TS<S<"dp">, R, R>,           // X, Y, dX: [b, s, m]
                                 TS<R, S<"tp">, R>,           // Wq, Wk, Wv: [m, h, d]
                                 TS<S<"tp">, R, R>,           // Wo: [h, d, m]
                                 TS<S<"dp">, R, R, P<"tp">>>;  // dX's terms, summed over heads later
using attention::ConstMap;
using attention::Map;
using attention::RowMatrix;
using attention::Tensor;

namespace {

constexpr attention::Sizes sizes{4, 12, 16, 4, 8};  // batch, seq, model, heads, head_dim
constexpr double tolerance = 1e-10;

/// The outputs compared with the serial run.
struct Results {
  Tensor<3> y, dx, dwq, dwk, dwv, dwo;
};

// ---- serial reference: per batch and head, plain Eigen matrices ---------------------------------

Results serial(const attention::Inputs& in) {
  const auto [batch, seq, model, heads, head_dim] = sizes;
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
    std::vector<RowMatrix> p(static_cast<std::size_t>(heads));
    const auto head = [&](const RowMatrix& m, Eigen::Index h) { return m.middleCols(h * head_dim, head_dim); };
    for (Eigen::Index h = 0; h < heads; ++h) {
      RowMatrix s = scale * head(q, h) * head(k, h).transpose();
      s = (s.colwise() - s.rowwise().maxCoeff()).array().exp().matrix();
      RowMatrix& ph = p[static_cast<std::size_t>(h)];
      ph = s.array().colwise() / s.rowwise().sum().array();
      o.middleCols(h * head_dim, head_dim) = ph * head(v, h);
    }
    Map y(r.y.data() + b * seq * model, seq, model);
    y = o * wo;
    const RowMatrix dy = y - t, d_o = dy * wo.transpose();
    dwo += o.transpose() * dy;
    for (Eigen::Index h = 0; h < heads; ++h) {
      const RowMatrix& ph = p[static_cast<std::size_t>(h)];
      const RowMatrix dp = head(d_o, h) * head(v, h).transpose();
      dv.middleCols(h * head_dim, head_dim) = ph.transpose() * head(d_o, h);
      const Eigen::VectorXd dot = (dp.array() * ph.array()).rowwise().sum();
      const RowMatrix ds = scale * (ph.array() * (dp.colwise() - dot).array()).matrix();
      dq.middleCols(h * head_dim, head_dim) = ds * head(k, h);
      dk.middleCols(h * head_dim, head_dim) = ds.transpose() * head(q, h);
    }
    dwq += x.transpose() * dq, dwk += x.transpose() * dk, dwv += x.transpose() * dv;
    Map(r.dx.data() + b * seq * model, seq, model) = dq * wq.transpose() + dk * wk.transpose() + dv * wv.transpose();
  }
  return r;
}

// ---- the sharded run, with a ledger of plans and their modeled traffic ------------------------

/// The pass's operations (attention::Plain), each also adding its plan's modeled traffic for
/// this rank and its description.
struct Ledger {
  Ledger(const Mesh2& mesh_, const Mesh2::coordinate_type& at_) : mesh(mesh_), at(at_) {}
  const Mesh2& mesh;
  Mesh2::coordinate_type at;
  sw::Traffic modeled;
  std::vector<std::string> lines;

  template <sw::fixed_string Spec, typename ShC = sw::NaturalOutput, typename A, typename B>
  auto einsum(const A& a, const B& b) {
    using Plan = sw::einsum_plan<Spec, Mesh2, typename A::sharding, typename B::sharding, ShC>;
    modeled += Plan::traffic(mesh, at, sizes.extents(), sizeof(double));
    lines.push_back(std::string(Spec.view()) + "  " + Plan::describe());
    return sw::einsum<Spec, ShC>(a, b);
  }
  template <typename T>
  auto reduce(const T& t) {
    auto reduced = sw::reduce(t);
    using Plan = sw::reshard_plan<Mesh2, typename T::sharding, typename decltype(reduced)::sharding>;
    modeled += Plan::traffic(mesh, at, t.global_extents(), sizeof(double));
    lines.push_back("reduce(dX)  " + Plan::describe());
    return reduced;
  }
};

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
  const attention::Inputs in(sizes);
  Ledger ledger(groups.mesh(), groups.coordinate());
  const sw::Traffic before = counters->total();
  const auto sharded = attention::forward_backward<Layout>(groups, in, sizes, ledger);
  const sw::Traffic counted = counters->total() - before;  // the pass (the gathers below aside)
  const Results got{sharded.y.to_global(),   sharded.dx.to_global(),  sharded.dwq.to_global(),
                    sharded.dwk.to_global(), sharded.dwv.to_global(), sharded.dwo.to_global()};

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
                static_cast<long long>(sizes.batch), static_cast<long long>(sizes.seq),
                static_cast<long long>(sizes.model), static_cast<long long>(sizes.heads),
                static_cast<long long>(sizes.head_dim), on_threads ? "the virtual cluster (4 threads)" : "4 MPI ranks");
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
