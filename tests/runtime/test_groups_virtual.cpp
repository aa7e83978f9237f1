// ProcessGroupMesh and ParallelContext on the virtual cluster: 1-D to 4-D meshes including
// ColossalAI's hybrid (dp, pp, tp, sp) layout on 16 ranks, de-duplication, wrap-around,
// index-subset groups, bad input, parallel modes.
#include <gtest/gtest.h>

#include <atomic>
#include <initializer_list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_checks.hpp"
#include "shardwise/comm/counting.hpp"
#include "shardwise/comm/virtual_cluster.hpp"
#include "shardwise/parallel_context.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace {

namespace sw = shardwise;
using sw::Axis;
using sw::Mesh;
using sw::ParallelMode;
using sw::VirtualCommunicator;

using Line = Mesh<Axis<"x", 5>>;
using Grid = Mesh<Axis<"x", 2>, Axis<"y", 4>>;
using Cube = Mesh<Axis<"dp", 2>, Axis<"pp", 3>, Axis<"tp", 2>>;
using Hybrid = Mesh<Axis<"dp", 2>, Axis<"pp", 2>, Axis<"tp", 2>, Axis<"sp", 2>>;
using Flat = Mesh<Axis<"a", 3>, Axis<"b", 1>, Axis<"c", 2>>;
using Elastic = Mesh<Axis<"dp", sw::dynamic_extent>, Axis<"tp", 2>>;
using Stages = Mesh<Axis<"dp", 2>, Axis<"pp", 4>>;

template <typename M>
void check_mesh(M mesh = M{}) {
  sw::run_virtual_cluster(mesh.size(), [&](VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<M> groups(comm, mesh);  // an lvalue communicator is duplicated
    EXPECT_EQ(groups.rank(), comm.rank());
    EXPECT_EQ(groups.size(), mesh.size());
    EXPECT_EQ(groups.coordinate(), mesh.unravel(comm.rank()));
    checks::check_all_axis_groups(groups);
    checks::check_group_errors(groups);
  });
}

TEST(ProcessGroupMeshVirtual, OneDimensional) { check_mesh<Line>(); }
TEST(ProcessGroupMeshVirtual, TwoDimensional) { check_mesh<Grid>(); }
TEST(ProcessGroupMeshVirtual, ThreeDimensional) { check_mesh<Cube>(); }
TEST(ProcessGroupMeshVirtual, HybridFourDimensionalOnSixteenRanks) { check_mesh<Hybrid>(); }
TEST(ProcessGroupMeshVirtual, DynamicExtent) { check_mesh(Elastic{3}); }

TEST(ProcessGroupMeshVirtual, CompileTimeNamesGiveTheSameGroups) {
  sw::run_virtual_cluster(16, [](VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Hybrid> groups(std::move(comm));  // an rvalue is taken over
    sw::AnyCommunicator& dp_sp = groups.group_along<"dp", "sp">();
    EXPECT_EQ(&dp_sp, &groups.group_along({"dp", "sp"}));
    EXPECT_EQ(&groups.group_along<"tp">(), &groups.group_along({"tp"}));
    sw::AnyCommunicator& all = groups.group_along<"dp", "pp", "tp", "sp">();
    EXPECT_EQ(&all, &groups.world());
    sw::AnyCommunicator& sp_dp = groups.group_along<"sp", "dp">();
    EXPECT_NE(&sp_dp, &dp_sp);
    EXPECT_EQ(sp_dp.size(), 4);
  });
}

TEST(ProcessGroupMeshVirtual, GroupsAreDeduplicatedByTheirOrderedRanks) {
  sw::run_virtual_cluster(6, [](VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Flat> groups(std::move(comm));
    EXPECT_EQ(groups.num_groups(), 1u);  // the world
    sw::AnyCommunicator& a = groups.group_along({"a"});
    EXPECT_EQ(groups.num_groups(), 2u);
    // Adding the extent-1 axis b changes nothing: same ranks, same object, nothing created.
    EXPECT_EQ(&groups.group_along({"a", "b"}), &a);
    EXPECT_EQ(&groups.group_along({"b", "a"}), &a);
    EXPECT_EQ(&groups.group_along({"a", "b", "c"}), &groups.world());
    EXPECT_EQ(&groups.group_along({"a", "c"}), &groups.world());
    EXPECT_EQ(groups.num_groups(), 2u);
    // b alone is this rank alone, like no axis at all.
    sw::AnyCommunicator& self = groups.group_along({"b"});
    EXPECT_EQ(self.size(), 1);
    EXPECT_EQ(&groups.group_along({}), &self);
    EXPECT_EQ(groups.num_groups(), 3u);
    // The same set in another order is another communicator: its blocks come in another order.
    sw::AnyCommunicator& ca = groups.group_along({"c", "a"});
    EXPECT_NE(&ca, &groups.world());
    EXPECT_EQ(groups.num_groups(), 4u);
    // Index subsets that cover the whole axis are the axis group.
    EXPECT_EQ(groups.group_along_indices("a", {0, 1, 2}), &a);
    EXPECT_EQ(groups.num_groups(), 4u);
  });
}

TEST(ProcessGroupMeshVirtual, IndexSubsetsAlongAnAxis) {
  sw::run_virtual_cluster(8, [](VirtualCommunicator& comm) {
    sw::ProcessGroupMesh<Stages> groups(std::move(comm));
    const int dp = groups.coordinate()[0], pp = groups.coordinate()[1];
    // First and last pipeline stage (e.g. tied embeddings).
    sw::AnyCommunicator* ends = groups.group_along_indices("pp", {0, 3});
    if (pp == 0 || pp == 3) {
      ASSERT_NE(ends, nullptr);
      EXPECT_EQ(ends->size(), 2);
      EXPECT_EQ(ends->rank(), pp == 0 ? 0 : 1);
      std::vector<int> members(2);
      const int me = groups.rank();
      ends->all_gather(std::span<const int>(&me, 1), members);
      EXPECT_EQ(members, (std::vector<int>{dp * 4 + 0, dp * 4 + 3}));
      EXPECT_EQ(groups.group_along_indices("pp", {0, 3}), ends);  // cached
    } else {
      EXPECT_EQ(ends, nullptr);
    }
    // The listed order is the group order.
    sw::AnyCommunicator* reversed = groups.group_along_indices("pp", {3, 1});
    if (pp == 3 || pp == 1) {
      ASSERT_NE(reversed, nullptr);
      EXPECT_EQ(reversed->rank(), pp == 3 ? 0 : 1);
    } else {
      EXPECT_EQ(reversed, nullptr);
    }
    EXPECT_THROW((void)groups.group_along_indices("pp", {4}), std::invalid_argument);
  });
}

TEST(ProcessGroupMeshVirtual, WrongWorldSizeThrowsOnEveryRank) {
  std::atomic<int> threw{0};
  sw::run_virtual_cluster(6, [&](VirtualCommunicator& comm) {
    try {
      sw::ProcessGroupMesh<Grid> groups(comm);
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                "shardwise::ProcessGroupMesh: the mesh has 8 ranks (x=2 x y=4) but the communicator has 6; launch 8 "
                "ranks or use a mesh whose extents multiply to 6");
      ++threw;
    }
    comm.barrier();  // nobody is left waiting
  });
  EXPECT_EQ(threw.load(), 6);
}

TEST(ProcessGroupMeshVirtual, WorksOverTheCountingWrapper) {
  sw::VirtualCluster cluster(8);
  cluster.run([](VirtualCommunicator& comm) {
    sw::CountingCommunicator<VirtualCommunicator> counting(std::move(comm));
    auto counters = counting.shared_counters();
    sw::ProcessGroupMesh<Grid> groups(std::move(counting));
    std::vector<double> x(10, 1.0);
    groups.group_along({"y"}).all_reduce(x);
    EXPECT_EQ(x, std::vector<double>(10, 4.0));
    EXPECT_EQ(counters->all_reduce.calls, 1);
    EXPECT_EQ(counters->all_reduce.traffic,
              sw::detail::ring_all_reduce_traffic(10, 4, groups.group_along({"y"}).rank(), 8));
  });
}

// ---- ParallelContext ------------------------------------------------------------

const std::vector<sw::ModeBinding> hybrid_bindings = {
    {ParallelMode::data, {"dp"}},
    {ParallelMode::pipeline, {"pp"}},
    {ParallelMode::tensor, {"tp"}},
    {ParallelMode::sequence, {"sp"}},
    {ParallelMode::expert, {"dp", "sp"}},  // a mode over two axes
};

TEST(ParallelContextVirtual, ModesOnTheHybridMesh) {
  sw::run_virtual_cluster(16, [](VirtualCommunicator& comm) {
    sw::ParallelContext<Hybrid> context(sw::ProcessGroupMesh<Hybrid>(comm), hybrid_bindings);
    const auto& c = context.groups().coordinate();
    EXPECT_EQ(context.global_rank(), comm.rank());
    EXPECT_EQ(context.global_size(), 16);
    EXPECT_EQ(context.local_rank(ParallelMode::global), comm.rank());
    EXPECT_EQ(context.group_size(ParallelMode::global), 16);
    EXPECT_EQ(&context.group(ParallelMode::global), &context.groups().world());
    EXPECT_EQ(context.local_rank(ParallelMode::data), c[0]);
    EXPECT_EQ(context.local_rank(ParallelMode::pipeline), c[1]);
    EXPECT_EQ(context.local_rank(ParallelMode::tensor), c[2]);
    EXPECT_EQ(context.local_rank(ParallelMode::sequence), c[3]);
    EXPECT_EQ(context.local_rank(ParallelMode::expert), c[0] * 2 + c[3]);
    EXPECT_EQ(context.group_size(ParallelMode::expert), 4);
    for (ParallelMode mode : {ParallelMode::global, ParallelMode::data, ParallelMode::tensor, ParallelMode::pipeline,
                              ParallelMode::sequence, ParallelMode::expert}) {
      SCOPED_TRACE(sw::to_string(mode));
      EXPECT_TRUE(context.is_bound(mode));
      sw::AnyCommunicator& group = context.group(mode);
      EXPECT_EQ(&context.group(mode), &group);
      EXPECT_EQ(group.rank(), context.local_rank(mode));
      EXPECT_EQ(group.size(), context.group_size(mode));
      const std::vector<int> ranks = context.ranks_in_group(mode);
      std::vector<int> gathered(ranks.size());
      const int me = context.global_rank();
      group.all_gather(std::span<const int>(&me, 1), gathered);
      EXPECT_EQ(gathered, ranks);
      const int local = context.local_rank(mode), size = context.group_size(mode);
      EXPECT_EQ(context.next_rank(mode), ranks[static_cast<std::size_t>((local + 1) % size)]);
      EXPECT_EQ(context.prev_rank(mode), ranks[static_cast<std::size_t>((local + size - 1) % size)]);
      EXPECT_EQ(context.is_first(mode), local == 0);
      EXPECT_EQ(context.is_last(mode), local == size - 1);
    }
    EXPECT_EQ(context.is_master(), comm.rank() == 0);
    EXPECT_EQ(context.node_local_rank(), comm.rank());  // one process: one node
    EXPECT_EQ(context.node_local_size(), 16);
    EXPECT_EQ(context.launcher_environment().launcher, sw::Launcher::none);
  });
}

using Square = Mesh<Axis<"x", 2>, Axis<"y", 2>>;

TEST(ParallelContextVirtual, AnUnboundModeIsAGroupOfOne) {
  sw::run_virtual_cluster(4, [](VirtualCommunicator& comm) {
    sw::ParallelContext<Square> context(sw::ProcessGroupMesh<Square>(comm),
                                        {{ParallelMode::data, {"x"}}, {ParallelMode::tensor, {"y"}}});
    for (ParallelMode mode : {ParallelMode::pipeline, ParallelMode::sequence, ParallelMode::expert}) {
      EXPECT_FALSE(context.is_bound(mode));
      EXPECT_EQ(context.local_rank(mode), 0);
      EXPECT_EQ(context.group_size(mode), 1);
      EXPECT_EQ(context.group(mode).size(), 1);
      EXPECT_EQ(context.ranks_in_group(mode), std::vector<int>{comm.rank()});
      EXPECT_EQ(context.next_rank(mode), comm.rank());
      EXPECT_EQ(context.prev_rank(mode), comm.rank());
      EXPECT_TRUE(context.is_first(mode) && context.is_last(mode));
    }
    EXPECT_EQ(&context.group(ParallelMode::pipeline), &context.group(ParallelMode::expert));  // de-duplicated
  });
}

TEST(ParallelContextVirtual, BadBindingsAreRejected) {
  sw::run_virtual_cluster(4, [](VirtualCommunicator& comm) {
    auto make = [&](std::initializer_list<sw::ModeBinding> bindings) {
      return sw::ParallelContext<Square>(sw::ProcessGroupMesh<Square>(comm), bindings);
    };
    EXPECT_THROW(make({{ParallelMode::global, {"x"}}}), std::invalid_argument);
    EXPECT_THROW(make({{ParallelMode::data, {"x"}}, {ParallelMode::data, {"y"}}}), std::invalid_argument);
    EXPECT_THROW(make({{ParallelMode::tensor, {"y", "y"}}}), std::invalid_argument);
    try {
      make({{ParallelMode::tensor, {"z"}}});
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                "shardwise::ParallelContext: mode tensor is bound to axis \"z\", which the mesh does not have; its "
                "axes are x, y");
    }
  });
}

TEST(ParallelContextVirtual, PrintOnMasterAndOrderedExecution) {
  std::mutex mutex;
  std::vector<int> order;
  testing::internal::CaptureStdout();
  sw::run_virtual_cluster(4, [&](VirtualCommunicator& comm) {
    sw::ParallelContext<Square> context(sw::ProcessGroupMesh<Square>(comm), {{ParallelMode::data, {"x"}}});
    context.print_on_master("hello from rank ", context.global_rank(), " of ", context.global_size());
    context.ordered([&] {
      const std::lock_guard lock(mutex);
      order.push_back(context.global_rank());
    });
  });
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "hello from rank 0 of 4\n");
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
