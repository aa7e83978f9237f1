// The time model (plan/time_model.hpp) on examples computed by hand, the planners choosing by
// time (AnyMeshOptions::machine, plan_matmul_by_time), and the simulated machines against their
// platform files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "shardwise/plan/machine.hpp"
#include "shardwise/plan/sharding_planner.hpp"
#include "shardwise/plan/time_model.hpp"

namespace sw = shardwise;
namespace d = sw::detail;

namespace {

// Round numbers: 1 GFLOP/s, 1 GB/s, 1 us per link (a fat tree's message crosses 4 links: 4 us).
constexpr sw::Machine round_machine{.gemm_flops_per_second = 1e9, .link_bytes_per_second = 1e9,
                                    .link_latency_seconds = 1e-6};

d::block_geometry mesh_of(std::initializer_list<int> extents) {
  d::block_geometry g;
  for (int e : extents) g.extents[static_cast<std::size_t>(g.ndim++)] = e;
  return g;
}

d::tensor_axes matrix(d::axis_list rows, d::axis_list cols) {
  d::tensor_axes t;
  t.rank = 2;
  t.dim(0) = rows;
  t.dim(1) = cols;
  return t;
}

// One broadcast of `bytes` over a line of `group` ranks.
double broadcast(const sw::Machine& machine, std::int64_t bytes, int group) {
  return d::broadcast_seconds(machine, d::broadcast_messages(machine, mesh_of({group}), {0}), bytes, group);
}

TEST(TimeModel, BinomialBroadcastPaysItsMessageOncePerRound) {
  // 8 ranks: 3 rounds of 1 MiB, each 4 us + 1048576 B / 1 GB/s.
  EXPECT_DOUBLE_EQ(broadcast(round_machine, 1 << 20, 8), 3 * (4e-6 + 1048576e-9));
  // 5 ranks: ceil(log2 5) = 3 rounds too; one rank: nothing.
  EXPECT_DOUBLE_EQ(broadcast(round_machine, 1 << 20, 5), 3 * (4e-6 + 1048576e-9));
  EXPECT_EQ(broadcast(round_machine, 1 << 20, 1), 0.0);
}

TEST(TimeModel, PipelinedChainPaysItsMessageOncePlusTheFill) {
  sw::Machine chain = round_machine;
  chain.broadcast = sw::BroadcastAlgorithm::pipelined_chain;
  // 1 MiB in 8 segments of 128 KiB along 8 ranks: 8 + 6 segment times.
  EXPECT_DOUBLE_EQ(broadcast(chain, 1 << 20, 8), 14 * (4e-6 + 131072e-9));
  EXPECT_LT(broadcast(chain, 1 << 20, 8), broadcast(round_machine, 1 << 20, 8));
}

TEST(TimeModel, TorusRoutesAndSharesLinks) {
  // A ring of 4 hosts (a 4 x 1 x 1 torus) under a 2 x 2 mesh. Along the minor axis y, each rank
  // sends to its neighbour host: 1 hop, a link each. Along x (stride 2), each sends 2 hosts on,
  // the forward way: 2 hops, and every forward link carries 2 of the 4 messages.
  sw::Machine torus = round_machine;
  torus.network = sw::Network::torus;
  torus.torus_extents = {4, 1, 1};
  const d::block_geometry mesh = mesh_of({2, 2});
  const d::message_cost along_y = d::ring_message(torus, mesh, {1});
  EXPECT_DOUBLE_EQ(along_y.latency_seconds, 1e-6);
  EXPECT_DOUBLE_EQ(along_y.seconds_per_byte, 1e-9);
  const d::message_cost along_x = d::ring_message(torus, mesh, {0});
  EXPECT_DOUBLE_EQ(along_x.latency_seconds, 2e-6);
  EXPECT_DOUBLE_EQ(along_x.seconds_per_byte, 2e-9);
  // A binomial broadcast over all 4 ranks from rank 0, the farthest first: rank 0 to 2 (2 hops),
  // then 0 to 1 and 2 to 3 (1 hop each, on links of their own).
  const d::broadcast_rounds rounds = d::broadcast_messages(torus, mesh, {0, 1});
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_DOUBLE_EQ(rounds[0].latency_seconds, 2e-6);
  EXPECT_DOUBLE_EQ(rounds[0].seconds_per_byte, 1e-9);
  EXPECT_DOUBLE_EQ(rounds[1].latency_seconds, 1e-6);
  EXPECT_DOUBLE_EQ(rounds[1].seconds_per_byte, 1e-9);
  // A 5-rank line (5 x 1 x 1): 0 to 4, 0 to 2, then 0 to 1 and 2 to 3; 0 to 4 goes back 1 hop.
  torus.torus_extents = {5, 1, 1};
  const d::broadcast_rounds five = d::broadcast_messages(torus, mesh_of({5}), {0});
  ASSERT_EQ(five.size(), 3u);
  EXPECT_DOUBLE_EQ(five[0].latency_seconds, 1e-6);
  EXPECT_DOUBLE_EQ(five[1].latency_seconds, 2e-6);
  EXPECT_DOUBLE_EQ(five[2].latency_seconds, 1e-6);
}

TEST(TimeModel, TwoRankSumma) {
  // 256^3 on a 1 x 2 grid, A, B and C blocked [x, y]: A's k is split in two, so its 2 panels
  // of 128 columns (256 x 128 doubles, 262144 bytes) are each broadcast to the other rank (one
  // round); B's group is one rank. Each rank multiplies 256 x 256 x 128.
  const d::block_geometry mesh = mesh_of({1, 2});
  const sw::MatmulProblem problem{{.m = 256, .k = 256, .n = 256}, 8};
  const d::tensor_axes blocks = matrix({0}, {1});
  const sw::MatmulChoice summa =
      d::evaluate_matmul(mesh, problem, blocks, blocks, blocks, blocks, blocks, d::VariantKind::summa, {}).choice;
  ASSERT_TRUE(summa.found);
  ASSERT_EQ(summa.plan.steps.size(), 1u);
  ASSERT_EQ(summa.plan.steps[0].kind, sw::StepKind::summa_gemm);
  const sw::PredictedTime t = sw::predicted_time(round_machine, mesh, problem, summa);
  const double gemm = 2.0 * 256 * 256 * 128 / 1e9;
  EXPECT_DOUBLE_EQ(t.compute_seconds, gemm);
  EXPECT_DOUBLE_EQ(t.seconds, gemm + 2 * (4e-6 + 262144e-9));
}

TEST(TimeModel, AllReduceAfterTheGemm) {
  // 64 x 256 x 64 on 4 ranks, k split, C wanted whole: local GEMM (64 x 64 x 64), then a ring
  // AllReduce of 4096 doubles: 2 x 3 messages and 2 x 3/4 x 32768 bytes.
  const d::block_geometry mesh = mesh_of({4});
  const sw::MatmulProblem problem{{.m = 64, .k = 256, .n = 64}, 8};
  const d::tensor_axes a = matrix({}, {0}), b = matrix({0}, {});
  const sw::MatmulChoice choice =
      d::evaluate_matmul(mesh, problem, a, b, a, b, matrix({}, {}), d::VariantKind::standard, {}).choice;
  ASSERT_TRUE(choice.found);
  ASSERT_EQ(choice.plan.steps.size(), 2u);
  ASSERT_EQ(choice.plan.steps[0].kind, sw::StepKind::local_gemm);
  ASSERT_EQ(choice.plan.steps[1].kind, sw::StepKind::all_reduce);
  const sw::PredictedTime t = sw::predicted_time(round_machine, mesh, problem, choice);
  EXPECT_DOUBLE_EQ(t.compute_seconds, 2.0 * 64 * 64 * 64 / 1e9);
  EXPECT_DOUBLE_EQ(t.seconds, 2.0 * 64 * 64 * 64 / 1e9 + 49152e-9 + 6 * 4e-6);
}

TEST(TimeModel, RingOverlapsItsExchangesWithTheGemms) {
  // A[-, x] times B[x, -] on 4 ranks, C scattered along m by a ring: the first quarter's GEMM
  // alone, then 3 exchanges of a quarter of C, each behind the next quarter's GEMM. When the
  // GEMMs are slower, they are the whole time; when the network is, the exchanges and one GEMM.
  const d::block_geometry mesh = mesh_of({4});
  const sw::MatmulProblem problem{{.m = 256, .k = 256, .n = 256}, 8};
  const d::tensor_axes a = matrix({}, {0}), b = matrix({0}, {});
  const auto e = d::evaluate_matmul(mesh, problem, a, b, a, b, matrix({0}, {}), d::VariantKind::ring, {});
  ASSERT_TRUE(e.choice.found);
  ASSERT_EQ(e.choice.plan.steps.size(), 1u);
  ASSERT_EQ(e.choice.plan.steps[0].kind, sw::StepKind::ring_gemm_reduce_scatter);
  const double gemm = 2.0 * 256 * 64 * 256 / 1e9;       // all of m and n, a quarter of k
  const double exchange = 64 * 256 * 8 / 1e9 + 4e-6;  // a quarter of C: 64 rows
  const sw::PredictedTime fast_network = sw::predicted_time(round_machine, mesh, problem, e.choice);
  EXPECT_DOUBLE_EQ(fast_network.seconds, 3 * std::max(exchange, gemm / 4) + gemm / 4);
  EXPECT_DOUBLE_EQ(fast_network.seconds, gemm);
  sw::Machine slow_network = round_machine;
  slow_network.link_bytes_per_second = 1e6;
  const double slow_exchange = 64 * 256 * 8 / 1e6 + 4e-6;
  EXPECT_DOUBLE_EQ(sw::predicted_time(slow_network, mesh, problem, e.choice).seconds, 3 * slow_exchange + gemm / 4);
}

// P = 7 ranks, the shape simulation/simulate check uses: by bytes, a 3 x 2 grid leaving a rank
// idle; on a machine whose network is nearly free, the plan on all 7 ranks is faster (each
// rank multiplies 1/7 of the product instead of 1/6), and the planner by time picks it.
constexpr sw::MatmulProblem seven_rank_problem{{.m = 200, .k = 48, .n = 160}, 8};
constexpr sw::Machine compute_bound{.gemm_flops_per_second = 1e9, .link_bytes_per_second = 1e15,
                                    .link_latency_seconds = 1e-12};

TEST(TimeModel, PlannerByTimeUsesTheIdleRankWhenComputeBound) {
  const sw::MeshedMatmulChoice by_bytes = sw::plan_matmul_any_mesh(7, seven_rank_problem, {.allow_idle = true});
  const sw::MeshedMatmulChoice by_time =
      sw::plan_matmul_any_mesh(7, seven_rank_problem, {.allow_idle = true, .machine = compute_bound});
  ASSERT_TRUE(by_bytes.choice.found);
  ASSERT_TRUE(by_time.choice.found);
  EXPECT_EQ(by_bytes.ranks_used(), 6);
  EXPECT_EQ(by_time.ranks_used(), 7);
  EXPECT_FALSE(by_bytes.predicted.has_value());
  ASSERT_TRUE(by_time.predicted.has_value());
  // Faster by the model, and sends more: bytes alone would not have picked it.
  const sw::PredictedTime bytes_plan_time =
      sw::predicted_time(compute_bound, by_bytes.mesh, seven_rank_problem, by_bytes.choice);
  EXPECT_LT(by_time.predicted->seconds, bytes_plan_time.seconds);
  EXPECT_GT(by_time.choice.traffic.bytes, by_bytes.choice.traffic.bytes);
  // The GEMMs are the whole time, and 7/6 of it on 6 ranks.
  const double flops = 2.0 * 200 * 48 * 160;
  EXPECT_NEAR(bytes_plan_time.compute_seconds, flops / 6 / 1e9, flops / 1e9 * 0.02);
  EXPECT_NEAR(by_time.predicted->compute_seconds, flops / 7 / 1e9, flops / 1e9 * 0.02);
}

TEST(TimeModel, PlannerByTimeKeepsTheBytesPlanWhenTheNetworkIsSlow) {
  // A network a million times slower than the GEMMs: the bytes decide, as without a machine.
  constexpr sw::Machine network_bound{.gemm_flops_per_second = 1e15, .link_bytes_per_second = 1e6,
                                      .link_latency_seconds = 1e-6};
  const sw::MeshedMatmulChoice by_bytes = sw::plan_matmul_any_mesh(7, seven_rank_problem, {.allow_idle = true});
  const sw::MeshedMatmulChoice by_time =
      sw::plan_matmul_any_mesh(7, seven_rank_problem, {.allow_idle = true, .machine = network_bound});
  EXPECT_EQ(by_time.ranks_used(), by_bytes.ranks_used());
  EXPECT_EQ(by_time.choice.traffic.bytes, by_bytes.choice.traffic.bytes);
}

TEST(TimeModel, PlansWithinTheToleranceGoByBytes) {
  // P = 64, flat 2^17 x 2^11 x 2^17 on the simulated fat tree: by bytes an 8 x 4 x 2 grid; a 1-D
  // ring on all 64 ranks hides its messages and is predicted 0.04 % faster while it sends 4.5
  // times the bytes. Within the default tolerance (1 %) the bytes decide; with none, the time.
  const sw::MatmulProblem flat{{.m = 131072, .k = 2048, .n = 131072}, 8, std::int64_t{4} << 30};
  const sw::MeshedMatmulChoice by_bytes = sw::plan_matmul_any_mesh(64, flat, {.allow_idle = true});
  const sw::MeshedMatmulChoice tolerant =
      sw::plan_matmul_any_mesh(64, flat, {.allow_idle = true, .machine = sw::machines::simulated_fat_tree});
  const sw::MeshedMatmulChoice strict = sw::plan_matmul_any_mesh(
      64, flat, {.allow_idle = true, .machine = sw::machines::simulated_fat_tree, .time_tolerance = 0});
  EXPECT_EQ(tolerant.mesh.ndim, by_bytes.mesh.ndim);
  EXPECT_EQ(tolerant.choice.traffic.bytes, by_bytes.choice.traffic.bytes);
  EXPECT_EQ(strict.mesh.ndim, 1);
  EXPECT_EQ(strict.choice.variant, d::VariantKind::ring);
  ASSERT_TRUE(tolerant.predicted && strict.predicted);
  EXPECT_LT(strict.predicted->seconds, tolerant.predicted->seconds);
  EXPECT_LT(tolerant.predicted->seconds, strict.predicted->seconds * 1.01);
  EXPECT_GT(strict.choice.traffic.bytes, 4 * tolerant.choice.traffic.bytes);
  EXPECT_THROW(sw::plan_matmul_any_mesh(64, flat, {.machine = round_machine, .time_tolerance = -1}), std::invalid_argument);
}

// The same choice in a constant expression.
static_assert(sw::plan_matmul_any_mesh(7, seven_rank_problem, {.allow_idle = true, .machine = compute_bound})
                  .ranks_used() == 7);
static_assert(sw::plan_matmul_any_mesh(7, seven_rank_problem, {.allow_idle = true}).ranks_used() == 6);

TEST(TimeModel, OnOneMeshTheRingWinsWhereItHidesTheSameBytes) {
  // 4 x 4 x 4 ranks, tall 2^16 x 2^10 x 2^10 on the simulated torus: by bytes a standard plan;
  // the ring plan of the same bytes overlaps its exchanges with its GEMMs and is predicted
  // 6.5 % faster (0.0573 s against 0.0613 s). On the fat tree the two are within the tolerance,
  // and the bytes decide.
  // ---- begin README block ----
  const sw::MeshedMatmulChoice on_cube = sw::plan_matmul_by_time(
      sw::Mesh<sw::Axis<"x", 4>, sw::Axis<"y", 4>, sw::Axis<"z", 4>>{},
      {{.m = 65536, .k = 1024, .n = 1024}, sizeof(double), std::int64_t{4} << 30}, sw::machines::simulated_torus);
  // on_cube.choice: a ring plan; on_cube.predicted->seconds; on_cube.describe()
  // ---- end README block ----
  const d::block_geometry cube = mesh_of({4, 4, 4});
  const sw::MatmulProblem tall{{.m = 65536, .k = 1024, .n = 1024}, 8, std::int64_t{4} << 30};
  const sw::MatmulChoice by_bytes = sw::plan_matmul(cube, tall);
  const sw::MeshedMatmulChoice torus = sw::plan_matmul_by_time(cube, tall, sw::machines::simulated_torus);
  ASSERT_TRUE(by_bytes.found && torus.choice.found && torus.predicted);
  EXPECT_EQ(on_cube.choice.variant, d::VariantKind::ring);
  EXPECT_EQ(on_cube.predicted->seconds, torus.predicted->seconds);
  EXPECT_EQ(by_bytes.variant, d::VariantKind::standard);
  EXPECT_EQ(torus.choice.variant, d::VariantKind::ring);
  EXPECT_EQ(torus.choice.traffic.bytes, by_bytes.traffic.bytes);
  const double bytes_plan_time = sw::predicted_time(sw::machines::simulated_torus, cube, tall, by_bytes).seconds;
  EXPECT_LT(torus.predicted->seconds * 1.05, bytes_plan_time);
  EXPECT_EQ(torus.ranks_used(), 64);
  EXPECT_EQ(torus.idle_ranks(), 0);
  EXPECT_NE(torus.describe().find("; predicted "), std::string::npos) << torus.describe();

  const sw::MeshedMatmulChoice fat_tree = sw::plan_matmul_by_time(cube, tall, sw::machines::simulated_fat_tree);
  EXPECT_EQ(fat_tree.choice.variant, d::VariantKind::standard);
  // With a tolerance that admits every family, plan_matmul's own choice.
  const sw::MeshedMatmulChoice any = sw::plan_matmul_by_time(cube, tall, sw::machines::simulated_torus, 1e9);
  EXPECT_EQ(any.choice.variant, by_bytes.variant);
  EXPECT_EQ(any.choice.traffic, by_bytes.traffic);
  EXPECT_THROW(sw::plan_matmul_by_time(cube, tall, round_machine, -1), std::invalid_argument);
  sw::Machine no_rate = round_machine;
  no_rate.gemm_flops_per_second = 0;
  EXPECT_THROW(sw::plan_matmul_by_time(cube, tall, no_rate), std::invalid_argument);
}

TEST(TimeModel, OnOneMeshByTimeKeepsTheBytesPlanElsewhere) {
  // On the meshes and shapes of the simulated table's scale, the plan by time on one mesh is
  // the plan by bytes but in the case above: within a mesh the families rarely trade.
  const sw::MatmulShape shapes[] = {{.m = 8192, .k = 8192, .n = 8192}, {.m = 1024, .k = 65536, .n = 1024},
                                    {.m = 4096, .k = 4096, .n = 64}};
  for (const auto& machine : {sw::machines::simulated_fat_tree, sw::machines::simulated_torus})
    for (const d::block_geometry& mesh : {mesh_of({16, 16}), mesh_of({8, 8, 4}), mesh_of({256})})
      for (const sw::MatmulShape& shape : shapes) {
        const sw::MatmulProblem problem{shape, 8, std::int64_t{64} << 30};
        const sw::MatmulChoice by_bytes = sw::plan_matmul(mesh, problem);
        const sw::MeshedMatmulChoice by_time = sw::plan_matmul_by_time(mesh, problem, machine);
        EXPECT_EQ(by_time.choice.traffic, by_bytes.traffic) << shape.m << " x " << shape.k << " x " << shape.n;
        EXPECT_EQ(by_time.choice.variant, by_bytes.variant) << shape.m << " x " << shape.k << " x " << shape.n;
      }
}

// In a constant expression, on a mesh type (a small one: four searches, each without the
// others' bound, and the compilers' default limits on constant evaluation).
static_assert(sw::plan_matmul_by_time(sw::Mesh<sw::Axis<"x", 4>, sw::Axis<"y", 2>>{},
                                      {{.m = 4096, .k = 4096, .n = 4096}, 8, std::int64_t{4} << 30},
                                      sw::machines::simulated_fat_tree)
                  .choice.traffic == sw::plan_matmul(sw::Mesh<sw::Axis<"x", 4>, sw::Axis<"y", 2>>{},
                                                     {{.m = 4096, .k = 4096, .n = 4096}, 8, std::int64_t{4} << 30})
                                         .traffic);

TEST(TimeModel, DescribeNamesThePredictedTimeBesideTheBytes) {
  const sw::MeshedMatmulChoice by_time =
      sw::plan_matmul_any_mesh(7, seven_rank_problem, {.allow_idle = true, .machine = compute_bound});
  const std::string text = by_time.describe();
  EXPECT_NE(text.find("7 mesh on ranks 0-6 of 7: "), std::string::npos) << text;
  EXPECT_NE(text.find("; predicted "), std::string::npos) << text;
  EXPECT_NE(text.find(" s (GEMMs "), std::string::npos) << text;
  EXPECT_NE(text.find("busiest rank sends " + std::to_string(by_time.choice.traffic.bytes) + " bytes"),
            std::string::npos)
      << text;
  const sw::MeshedMatmulChoice by_bytes = sw::plan_matmul_any_mesh(7, seven_rank_problem, {.allow_idle = true});
  EXPECT_EQ(by_bytes.describe().find("predicted"), std::string::npos) << by_bytes.describe();
}

TEST(TimeModel, RefusesAMachineItCannotTime) {
  sw::Machine no_rate = round_machine;
  no_rate.gemm_flops_per_second = 0;
  EXPECT_THROW(sw::plan_matmul_any_mesh(7, seven_rank_problem, {.machine = no_rate}), std::invalid_argument);
  sw::Machine torus_without_extents = round_machine;
  torus_without_extents.network = sw::Network::torus;
  try {
    sw::plan_matmul_any_mesh(7, seven_rank_problem, {.machine = torus_without_extents});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("shardwise::plan_matmul_any_mesh: the machine is a torus without torus_extents"),
              std::string::npos)
        << e.what();
  }
}

// The named machines hold what the platform files say.
struct platform_values {
  double speed = 0, bandwidth = 0, latency = 0;
  std::string topology, topology_parameters;
};

double si(const std::string& number, const std::string& unit) {
  const double value = std::stod(number);
  if (unit == "Gf" || unit == "GBps") return value * 1e9;
  if (unit == "us") return value * 1e-6;
  ADD_FAILURE() << "unit " << unit;
  return 0;
}

platform_values read_platform(const std::string& name) {
  std::ifstream file(std::string(SHARDWISE_PLATFORMS_DIR) + "/" + name);
  std::stringstream text;
  text << file.rdbuf();
  const std::string xml = text.str();
  platform_values v;
  std::smatch m;
  auto attribute = [&](const char* key) {
    EXPECT_TRUE(std::regex_search(xml, m, std::regex(std::string("<cluster[^>]* ") + key + "=\"([0-9.]+)([A-Za-z]+)\"")))
        << name << ": " << key;
    return si(m[1], m[2]);
  };
  v.speed = attribute("speed");
  v.bandwidth = attribute("bw");
  v.latency = attribute("lat");
  if (std::regex_search(xml, m, std::regex("<cluster[^>]* topology=\"([A-Z_]+)\""))) v.topology = m[1];
  if (std::regex_search(xml, m, std::regex("<cluster[^>]* topo_parameters=\"([^\"]*)\""))) v.topology_parameters = m[1];
  return v;
}

TEST(Machines, SimulatedPlatformsMatchTheirFiles) {
  const platform_values fat_tree = read_platform("fat_tree_cluster.xml");
  EXPECT_DOUBLE_EQ(sw::machines::simulated_fat_tree.gemm_flops_per_second, fat_tree.speed);
  EXPECT_DOUBLE_EQ(sw::machines::simulated_fat_tree.link_bytes_per_second, fat_tree.bandwidth);
  EXPECT_DOUBLE_EQ(sw::machines::simulated_fat_tree.link_latency_seconds, fat_tree.latency);
  EXPECT_EQ(fat_tree.topology, "FAT_TREE");
  EXPECT_EQ(sw::machines::simulated_fat_tree.network, sw::Network::fat_tree);

  const platform_values torus = read_platform("torus_cluster.xml");
  EXPECT_DOUBLE_EQ(sw::machines::simulated_torus.gemm_flops_per_second, torus.speed);
  EXPECT_DOUBLE_EQ(sw::machines::simulated_torus.link_bytes_per_second, torus.bandwidth);
  EXPECT_DOUBLE_EQ(sw::machines::simulated_torus.link_latency_seconds, torus.latency);
  EXPECT_EQ(torus.topology, "TORUS");
  const auto& e = sw::machines::simulated_torus.torus_extents;
  EXPECT_EQ(torus.topology_parameters, std::to_string(e[0]) + "," + std::to_string(e[1]) + "," + std::to_string(e[2]));
  EXPECT_EQ(sw::machines::simulated_torus.network, sw::Network::torus);
  // The table ran SMPI's default broadcast.
  EXPECT_EQ(sw::machines::simulated_fat_tree.broadcast, sw::BroadcastAlgorithm::binomial_tree);
  EXPECT_EQ(sw::machines::simulated_torus.broadcast, sw::BroadcastAlgorithm::binomial_tree);
}

}  // namespace
