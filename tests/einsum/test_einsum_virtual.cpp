// einsum on the virtual cluster: the randomized differential test over N-D shardings (at
// least 500 planned cases per run, seed printed), the typed API (sw::einsum on ShardedTensor)
// on a pool of cases, reshard and reduce of tensors, and the run-time errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "einsum_random.hpp"
#include "einsum_typed_cases.hpp"
#include "local_checks.hpp"
#include "shardwise/comm/virtual_cluster.hpp"

namespace sw = shardwise;
using namespace sw::testing;

namespace {

/// Runs case `c` on a virtual cluster of its mesh; every rank's outcome.
template <typename M>
std::vector<EinsumOutcome> run_on_cluster(const EinsumCase& c, const M& mesh) {
  std::vector<EinsumOutcome> outcomes(static_cast<std::size_t>(mesh.size()));
  sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<M> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters), mesh);
    outcomes[static_cast<std::size_t>(rank)] = run_einsum_case(groups, c, *counters);
  });
  return outcomes;
}

std::vector<EinsumOutcome> run_on_cluster(const EinsumCase& c) {
  const auto& e = c.mesh;
  if (e.size() == 1) return run_on_cluster(c, EinsumLine{e[0]});
  if (e.size() == 2) return run_on_cluster(c, EinsumGrid{e[0], e[1]});
  return run_on_cluster(c, EinsumCube{e[0], e[1], e[2]});
}

}  // namespace

TEST(EinsumVirtual, RandomizedDifferential) {
  // SHARDWISE_TEST_SEED=<n> reproduces a run; every failure names its case.
  const char* given = std::getenv("SHARDWISE_TEST_SEED");
  const std::uint64_t seed = given ? std::strtoull(given, nullptr, 10) : 20261124;
  std::printf("einsum randomized differential test: seed %llu (set SHARDWISE_TEST_SEED to change)\n",
              static_cast<unsigned long long>(seed));
  std::mt19937_64 draw(seed);
  constexpr int wanted = 520;
  int planned = 0, drawn = 0, ring = 0, partial_out = 0, uneven = 0, complex = 0, sliced = 0;
  std::array<int, 4> by_mesh_dims{};
  std::array<int, 5> by_rank{};
  while (planned < wanted && drawn < 20 * wanted) {
    const EinsumCase c = draw_einsum_case(draw);
    ++drawn;
    if (!c.plan().error.ok()) continue;  // e.g. one axis on two output indices: a compile error for a type
    ++planned;
    ring += c.variant == sw::detail::VariantKind::ring;
    complex += c.scalar != EinsumCase::Scalar::f64;
    partial_out += !c.c.partial.empty();
    for (const sw::Step& s : c.plan().steps)
      if (s.kind == sw::StepKind::slice) {
        ++sliced;  // an operand sliced to match the other (or C to the requested split)
        break;
      }
    by_mesh_dims[c.mesh.size()]++;
    for (int op = 0; op < 3; ++op) by_rank[static_cast<std::size_t>(c.ix.ranks[static_cast<std::size_t>(op)])]++;
    const auto e = c.operand_extents();
    for (int op = 0; op < 2; ++op)
      for (int d = 0; d < c.ix.ranks[static_cast<std::size_t>(op)]; ++d) {
        const auto& t = op == 0 ? c.a : c.b;
        int parts = 1;
        for (int axis : t.dim(d)) parts *= c.mesh[static_cast<std::size_t>(axis)];
        uneven += e[static_cast<std::size_t>(op)][static_cast<std::size_t>(d)] % parts != 0;
      }
    SCOPED_TRACE("case " + std::to_string(planned) + " of the run with SHARDWISE_TEST_SEED=" + std::to_string(seed) +
                 ": " + c.describe());
    std::vector<EinsumOutcome> outcomes;
    try {  // an exception names its case too
      outcomes = run_on_cluster(c);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    for (std::size_t r = 0; r < outcomes.size(); ++r) {
      EXPECT_LE(outcomes[r].error, outcomes[r].tolerance) << "rank " << r;
      EXPECT_EQ(outcomes[r].measured, outcomes[r].modeled)
          << "rank " << r << ": measured " << outcomes[r].measured.bytes << " B / " << outcomes[r].measured.messages
          << " messages, modeled " << outcomes[r].modeled.bytes << " B / " << outcomes[r].modeled.messages;
    }
    if (::testing::Test::HasFailure()) break;  // the first failure is the useful one
  }
  std::printf("%d cases planned and checked (of %d drawn): meshes 1-D %d, 2-D %d, 3-D %d; operands of rank 1-4: "
              "%d %d %d %d; ring %d; Partial outputs %d; unevenly split dimensions %d; complex scalars %d; "
              "with a slice %d\n",
              planned, drawn, by_mesh_dims[1], by_mesh_dims[2], by_mesh_dims[3], by_rank[1], by_rank[2], by_rank[3],
              by_rank[4], ring, partial_out, uneven, complex, sliced);
  EXPECT_GE(planned, 500);
  EXPECT_GE(sliced, 50);  // the planner's slices are exercised (about a fifth of the cases)
  EXPECT_GE(complex, 150);  // complex<float> and complex<double>: about half of the cases
}

// ---- the typed API ---------------------------------------------------------------------------

TEST(EinsumVirtual, TypedCasesAgainstSerialAndModel) {
  const auto cases = typed_einsum_cases();
  LocalChecks quiet;  // count the schedules alone (no cross-rank agreement)
  std::uint64_t seed = 11;
  for (const DpTp& mesh : {DpTp{2, 2}, DpTp{1, 3}, DpTp{3, 1}, DpTp{2, 3}}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(c.name + " on " + std::to_string(mesh.extent(0)) + " x " + std::to_string(mesh.extent(1)));
      std::vector<TypedEinsumOutcome> outcomes(static_cast<std::size_t>(mesh.size()));
      const std::uint64_t case_seed = seed++;
      sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
        const int rank = comm.rank();
        auto counters = std::make_shared<sw::CommCounters>();
        sw::ProcessGroupMesh<DpTp> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters),
                                          mesh);
        outcomes[static_cast<std::size_t>(rank)] = c.run(groups, *counters, case_seed);
      });
      for (std::size_t r = 0; r < outcomes.size(); ++r) {
        EXPECT_LE(outcomes[r].error, outcomes[r].tolerance) << "rank " << r;
        EXPECT_EQ(outcomes[r].measured, outcomes[r].modeled)
            << "rank " << r << ": measured " << outcomes[r].measured.bytes << " B, modeled "
            << outcomes[r].modeled.bytes << " B";
        // The same product on transposed or permuted views of operands stored the other way round.
        EXPECT_LE(outcomes[r].permuted_error, outcomes[r].tolerance) << "rank " << r << " on permuted views";
        EXPECT_EQ(outcomes[r].permuted_measured, outcomes[r].modeled)
            << "rank " << r << " on permuted views: measured " << outcomes[r].permuted_measured.bytes
            << " B, modeled " << outcomes[r].modeled.bytes << " B";
      }
    }
  }
}

// ---- reshard and reduce of tensors; a Partial distributed and gathered ----------------------

namespace {
using R = sw::Replicated;
template <sw::fixed_string... N> using S = sw::Split<N...>;
template <sw::fixed_string... N> using P = sw::Partial<N...>;
template <typename... D> using TS = sw::TensorSharding<D...>;
using Tensor3 = Eigen::Tensor<double, 3, Eigen::RowMajor>;

double max_difference(const Tensor3& a, const Tensor3& b) {
  if (a.dimensions() != b.dimensions()) return 1e300;
  double worst = 0;
  for (Eigen::Index i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a.data()[i] - b.data()[i]));
  return worst;
}
}  // namespace

TEST(EinsumVirtual, ReshardReduceAndPartialTensors) {
  const DpTp mesh{2, 2};
  const auto x_global = global_tensor<3>({5, 7, 3}, 3);   // [b, s, m]
  const auto w_global = global_tensor<2>({3, 4}, 4);      // [m, h]
  std::vector<std::string> failures(4);
  sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    sw::ProcessGroupMesh<DpTp> groups(std::move(comm), mesh);
    auto fail = [&](const std::string& what) { if (failures[static_cast<std::size_t>(rank)].empty()) failures[static_cast<std::size_t>(rank)] = what; };
    // Gathering a minor axis, and a Partial reduced or scattered.
    const auto fine = sw::ShardedTensor<double, DpTp, TS<S<"dp">, S<"tp">, R>>::distribute(groups, x_global);
    const auto coarse = sw::reshard<TS<S<"dp">, R, R>>(fine);
    if (max_difference(coarse.to_global(), x_global) != 0) fail("reshard gathering s over tp");
    if (coarse.local_extents() != std::array<std::int64_t, 3>{rank < 2 ? 2 : 3, 7, 3}) fail("a block's extents");
    const auto w = sw::ShardedTensor<double, DpTp, TS<S<"tp">, R>>::distribute(groups, w_global);
    const auto x_m = sw::ShardedTensor<double, DpTp, TS<S<"dp">, R, S<"tp">>>::distribute(groups, x_global);
    auto pending = sw::einsum<"bsm,mh->bsh", TS<S<"dp">, R, R, P<"tp">>>(x_m, w);  // no communication
    const auto reduced = sw::reduce(pending);                                        // AllReduce over tp
    const auto scattered = sw::reduce<TS<S<"dp">, S<"tp">, R>>(pending);             // ReduceScatter over tp
    static_assert(std::is_same_v<decltype(reduced)::sharding, TS<S<"dp">, R, R>>);
    const auto want = sw::einsum<"bsm,mh->bsh", TS<R, R, R>>(x_m, w).to_global();
    if (max_difference(reduced.to_global(), want) > 1e-13) fail("reduce() of a Partial tensor");
    if (max_difference(scattered.to_global(), want) > 1e-13) fail("reduce<Split>() of a Partial tensor");
    if (max_difference(pending.to_global(), want) > 1e-13) fail("to_global() of a Partial tensor");
    // A Partial distributed: the value on coordinate 0 of tp, zeros elsewhere; the sum is the tensor.
    const auto p = sw::ShardedTensor<double, DpTp, TS<S<"dp">, R, R, P<"tp">>>::distribute(groups, x_global);
    if (max_difference(p.to_global(), x_global) != 0) fail("distribute/to_global of a Partial tensor");
    // from_local with this rank's block, and release.
    auto block = sw::ShardedTensor<double, DpTp, TS<S<"dp">, S<"tp">, R>>(fine).release();
    const auto again = sw::ShardedTensor<double, DpTp, TS<S<"dp">, S<"tp">, R>>::from_local(groups, {5, 7, 3}, std::move(block));
    if (max_difference(again.to_global(), x_global) != 0) fail("from_local(release())");
  });
  for (std::size_t r = 0; r < failures.size(); ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

TEST(EinsumVirtual, RunTimeErrors) {
  const DpTp mesh{2, 1};
  std::vector<std::string> texts(2);
  sw::run_virtual_cluster(mesh.size(), [&](sw::VirtualCommunicator& comm) {
    const int rank = comm.rank();
    sw::ProcessGroupMesh<DpTp> groups(std::move(comm), mesh);
    const auto a = sw::ShardedTensor<double, DpTp, TS<S<"dp">, R>>(groups, {4, 7});
    const auto b = sw::ShardedTensor<double, DpTp, TS<R, R>>(groups, {6, 3});
    std::string& text = texts[static_cast<std::size_t>(rank)];
    try {
      (void)sw::einsum<"mk,kn->mn">(a, b);
    } catch (const std::invalid_argument& e) {
      text = e.what();
    }
    auto moved = sw::ShardedTensor<double, DpTp, TS<R, R>>(groups, {7, 3});
    auto taken = std::move(moved);
    try {
      (void)sw::einsum<"mk,kn->mn">(a, moved);  // NOLINT(bugprone-use-after-move): the point of the test
      text += " | no error for a moved-from tensor";
    } catch (const std::logic_error& e) {
      text += std::string(" | ") + e.what();
    }
  });
  EXPECT_EQ(texts[0], texts[1]);
  EXPECT_EQ(texts[0],
            "shardwise::einsum: index k has extent 7 in A [4, 7] but 6 in B [6, 3] | shardwise::einsum: B was moved "
            "from (it no longer holds a block); use the tensor it was moved into (on rank 0)");
}

// ---- a sliced input or a gathered one, chosen per call from the extents -------------------------

namespace {

/// One einsum of operands sharded ShA and ShB on a virtual line: every rank's bytes counted and
/// modeled, and whether its result equals the product of the replicated operands.
struct ChosenEinsum {
  std::vector<sw::Traffic> counted, modeled;
  std::vector<std::string> failures;
};
template <sw::fixed_string Spec, typename ShA, typename ShB, typename TA, typename TB>
ChosenEinsum run_chosen_einsum(const EinsumLine& line, const TA& a_global, const TB& b_global,
                               const sw::IndexExtents& extents) {
  using Plan = sw::einsum_plan<Spec, EinsumLine, ShA, ShB>;
  const auto n = static_cast<std::size_t>(line.size());
  ChosenEinsum run{std::vector<sw::Traffic>(n), std::vector<sw::Traffic>(n), std::vector<std::string>(n)};
  LocalChecks quiet;  // the extents' agreement off, so that the counts are the schedule's alone
  sw::run_virtual_cluster(line.size(), [&](sw::VirtualCommunicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    auto counters = std::make_shared<sw::CommCounters>();
    sw::ProcessGroupMesh<EinsumLine> groups(sw::CountingCommunicator<sw::VirtualCommunicator>(std::move(comm), counters),
                                            line);
    const auto a = sw::ShardedTensor<double, EinsumLine, ShA>::distribute(groups, a_global);
    const auto b = sw::ShardedTensor<double, EinsumLine, ShB>::distribute(groups, b_global);
    const sw::Traffic before = counters->total();
    const auto c = sw::einsum<Spec>(a, b);
    run.counted[r] = counters->total() - before;
    run.modeled[r] = Plan::traffic(line, groups.coordinate(), extents, sizeof(double));
    using RA = sw::replicated_sharding_t<ShA::rank>;
    using RB = sw::replicated_sharding_t<ShB::rank>;
    const auto want = sw::einsum<Spec>(sw::ShardedTensor<double, EinsumLine, RA>::distribute(groups, a_global),
                                       sw::ShardedTensor<double, EinsumLine, RB>::distribute(groups, b_global))
                          .to_global();
    const auto got = c.to_global();
    double worst = got.size() == want.size() ? 0 : 1e300;
    for (Eigen::Index i = 0; i < got.size() && i < want.size(); ++i)
      worst = std::max(worst, std::abs(got.data()[i] - want.data()[i]));
    if (worst > 1e-12) run.failures[r] = "the result differs from the replicated product";
  });
  return run;
}

void expect_chosen(const ChosenEinsum& run, std::int64_t bytes_per_rank) {
  for (std::size_t r = 0; r < run.counted.size(); ++r) {
    EXPECT_EQ(run.failures[r], "") << "rank " << r;
    EXPECT_EQ(run.counted[r], run.modeled[r]) << "rank " << r << ": counted " << run.counted[r].bytes
                                              << " B, modeled " << run.modeled[r].bytes << " B";
    if (bytes_per_rank >= 0) {
      EXPECT_EQ(run.counted[r].bytes, bytes_per_rank) << "rank " << r;
    }
  }
}

using KSplit = TS<R, S<"x">>;
using Square = sw::einsum_plan<"ik,kj->ij", EinsumLine, KSplit, TS<R, R>>;
using Matvec = sw::einsum_plan<"ij,j->i", EinsumLine, KSplit, TS<R>>;
using BatchSplit = sw::einsum_plan<"bij,bj->bi", EinsumLine, TS<S<"x">, R, R>, TS<R, R>>;
static_assert(Square::has_alternative && Matvec::has_alternative && BatchSplit::has_alternative);
static_assert(Matvec::alternative_schedule[0] == sw::Step{sw::StepKind::all_gather, sw::Operand::A, 1, {0}, {}});
// The batch index: gathering A instead of slicing B leaves C replicated; the alternative then
// slices C to the output the type promises.
static_assert(BatchSplit::alternative_schedule[0].kind == sw::StepKind::all_gather &&
              BatchSplit::alternative_schedule[BatchSplit::alternative_schedule.size() - 1] ==
                  sw::Step{sw::StepKind::slice, sw::Operand::C, 0, {0}, {}});

}  // namespace

TEST(EinsumVirtual, SliceOrGatherChosenFromTheExtents) {
  EXPECT_EQ(Matvec::describe_choice(),
            "UnmatchedInner: slice B along j over x -> local GEMM -> AllReduce C over x => C[-]; or, when its busiest "
            "rank sends no more bytes for the extents, AllGather A along j over x -> local GEMM");
  for (int ranks : {2, 3, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const EinsumLine line{ranks};
    // Square matrices: the gather of A, (P - 1)/P n^2 words.
    const sw::IndexExtents square{{'i', 12}, {'k', 12}, {'j', 12}};
    EXPECT_TRUE(Square::uses_alternative(line, square, 8));
    expect_chosen(run_chosen_einsum<"ik,kj->ij", KSplit, TS<R, R>>(line, global_tensor<2>({12, 12}, 1),
                                                                 global_tensor<2>({12, 12}, 2), square),
                  (ranks - 1) * (12 * 12 / ranks) * 8);
    // A matrix times a vector: the slice, an AllReduce of 12 words.
    const sw::IndexExtents matvec{{'i', 12}, {'j', 12}};
    EXPECT_FALSE(Matvec::uses_alternative(line, matvec, 8));
    expect_chosen(run_chosen_einsum<"ij,j->i", KSplit, TS<R>>(line, global_tensor<2>({12, 12}, 3),
                                                            global_tensor<1>({12}, 4), matvec),
                  2 * (ranks - 1) * (12 / ranks) * 8);
    // A batch index split in A only: slicing B sends nothing.
    const sw::IndexExtents batch{{'b', 7}, {'i', 5}, {'j', 3}};
    EXPECT_FALSE(BatchSplit::uses_alternative(line, batch, 8));
    EXPECT_EQ(BatchSplit::max_traffic(line, batch, 8).bytes, 0);
    expect_chosen(run_chosen_einsum<"bij,bj->bi", TS<S<"x">, R, R>, TS<R, R>>(
                      line, global_tensor<3>({7, 5, 3}, 5), global_tensor<2>({7, 3}, 6), batch),
                  0);
    // Uneven extents, either branch: counted == modeled.
    expect_chosen(run_chosen_einsum<"ik,kj->ij", KSplit, TS<R, R>>(line, global_tensor<2>({13, 11}, 7),
                                                                 global_tensor<2>({11, 2}, 8),
                                                                 {{'i', 13}, {'k', 11}, {'j', 2}}),
                  -1);
    expect_chosen(run_chosen_einsum<"ik,kj->ij", KSplit, TS<R, R>>(line, global_tensor<2>({5, 11}, 9),
                                                                 global_tensor<2>({11, 13}, 10),
                                                                 {{'i', 5}, {'k', 11}, {'j', 13}}),
                  -1);
  }
}
