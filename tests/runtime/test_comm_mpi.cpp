// The MPI backend, ProcessGroupMesh and ParallelContext under mpiexec (1, 2, 3, 4 and 8 ranks,
// see tests/meson.build). Every test is collective: all ranks run the same calls.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_checks.hpp"
#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/comm/counting.hpp"
#include "shardwise/comm/mpi.hpp"
#include "shardwise/parallel_context.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace {

namespace sw = shardwise;
using sw::Axis;
using sw::dynamic_extent;
using sw::Mesh;
using sw::MpiCommunicator;
using sw::ParallelMode;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  return p;
}

static_assert(sw::Communicator<MpiCommunicator>);
static_assert(sw::Communicator<sw::CountingCommunicator<MpiCommunicator>>);
static_assert(sw::AdaptableToCommunicator<MPI_Comm>);

TEST(MpiCommunicator, WorksOnADuplicateOfTheUsersCommunicator) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  EXPECT_EQ(comm.rank(), world_rank());
  EXPECT_EQ(comm.size(), world_size());
  int relation = MPI_UNEQUAL;
  MPI_Comm_compare(comm.native(), MPI_COMM_WORLD, &relation);
  EXPECT_EQ(relation, MPI_CONGRUENT);  // same group, separate context
  // Library traffic does not match the user's messages: a user message with the same tag is
  // pending on MPI_COMM_WORLD while the library runs a sendrecv with that tag.
  const int right = (world_rank() + 1) % world_size(), left = (world_rank() + world_size() - 1) % world_size();
  int user_out = 1000 + world_rank(), user_in = -1;
  MPI_Request request;
  MPI_Isend(&user_out, 1, MPI_INT, right, 4, MPI_COMM_WORLD, &request);
  std::vector<int> mine{world_rank()}, got(1);
  comm.sendrecv(mine, right, got, left, 4);
  EXPECT_EQ(got[0], left);
  MPI_Recv(&user_in, 1, MPI_INT, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  EXPECT_EQ(user_in, 1000 + left);
}

TEST(MpiCommunicator, EveryCollectiveOnEveryScalarType) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  checks::check_collectives_all_types(comm);
}

TEST(MpiCommunicator, ThroughAnyCommunicatorAndTheCountingWrapper) {
  sw::CountingCommunicator<MpiCommunicator> counting{MpiCommunicator(MPI_COMM_WORLD)};
  auto counters = counting.shared_counters();
  sw::AnyCommunicator any(std::move(counting));
  ASSERT_NE(any.target<sw::CountingCommunicator<MpiCommunicator>>(), nullptr);
  EXPECT_EQ(any.target<MpiCommunicator>(), nullptr);
  checks::check_collectives<double>(any);
  checks::check_collectives<std::int64_t>(any);
  // The counts are the ring schedule's, whatever MPI does inside.
  counters->reset();
  const int p = any.size(), r = any.rank();
  std::vector<double> x(1000, 1.0);
  any.all_reduce(x);
  EXPECT_EQ(counters->all_reduce.traffic, sw::detail::ring_all_reduce_traffic(1000, p, r, 8));
  EXPECT_EQ(counters->all_reduce.calls, 1);
  std::vector<float> gathered(3 * static_cast<std::size_t>(p));
  any.all_gather(std::vector<float>(3), gathered);
  EXPECT_EQ(counters->all_gather.traffic, sw::detail::ring_all_gather_traffic(3 * p, 3, p, 4));
  EXPECT_EQ(counters->total(), counters->all_reduce.traffic + counters->all_gather.traffic);
}

TEST(MpiCommunicator, ArgumentErrorsAndWrongMessageSizes) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  checks::check_argument_errors(comm);
  EXPECT_THROW((void)sw::detail::mpi_count(std::int64_t{1} << 31, "a test"), std::invalid_argument);
  EXPECT_THROW(MpiCommunicator{MPI_COMM_NULL}, std::invalid_argument);
}

TEST(MpiCommunicator, FailedCallsBecomeMpiErrorsWithTheCallAndMpisMessage) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  // A real failure: the message is longer than the receive buffer (MPI_ERR_TRUNCATE).
  const int right = (comm.rank() + 1) % comm.size(), left = (comm.rank() + comm.size() - 1) % comm.size();
  std::vector<int> three(3), two(2);
  comm.send(three, right, 1);  // small: buffered
  try {
    comm.recv(two, left, 1);
    ADD_FAILURE() << "no error";
  } catch (const sw::MpiError& e) {
    EXPECT_EQ(e.call(), "MPI_Recv");
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(e.error_code(), text, &length);
    EXPECT_EQ(e.mpi_message(), std::string(text, static_cast<std::size_t>(length)));
    EXPECT_NE(std::string(e.what()).find("MPI_Recv failed: " + e.mpi_message()), std::string::npos) << e.what();
  }
  // The same through the nonblocking pair: the error names the receive.
  if (comm.size() > 1) {  // OpenMPI 4.1 truncates a self-message to a posted receive silently
    try {
      sw::Request request = comm.start_sendrecv(std::span<const int>(three), right, std::span<int>(two), left, 2);
      request.wait();
      ADD_FAILURE() << "no error";
    } catch (const sw::MpiError& e) {
      EXPECT_EQ(e.call(), "MPI_Irecv (completed by MPI_Waitall)");
    }
  }
  // The communicator still works afterwards.
  checks::check_all_reduce<int>(comm, 10);
  try {
    sw::detail::mpi_check(MPI_ERR_TAG, "MPI_Send");
  } catch (const sw::MpiError& e) {
    EXPECT_EQ(e.call(), "MPI_Send");
    EXPECT_EQ(e.error_code(), MPI_ERR_TAG);
    EXPECT_FALSE(e.mpi_message().empty());
  }
}

TEST(MpiCommunicator, WorksOnAUserCommunicatorAndLeavesItAlone) {
  MPI_Comm halves = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() % 2, world_rank(), &halves);
  {
    MpiCommunicator comm(halves);
    EXPECT_EQ(comm.size(), (world_size() + 1 - world_rank() % 2) / 2);
    checks::check_collectives<double>(comm);
    MpiCommunicator moved(std::move(comm));
    MpiCommunicator assigned(MPI_COMM_WORLD);
    assigned = std::move(moved);  // frees the world dup, takes over the halves dup
    checks::check_all_reduce<int>(assigned, 3);
  }
  int size = 0;
  EXPECT_EQ(MPI_Comm_size(halves, &size), MPI_SUCCESS);  // still the user's, still valid
  MPI_Comm_free(&halves);
}

TEST(MpiCommunicator, Subgroups) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  checks::check_subgroups(comm);
  sw::AnyCommunicator any(MpiCommunicator(MPI_COMM_WORLD));
  checks::check_subgroups(any);
}

// ---- ProcessGroupMesh -----------------------------------------------------------

template <typename M>
void check_mesh(const M& mesh) {
  sw::ProcessGroupMesh<M> groups(MPI_COMM_WORLD, mesh);
  EXPECT_EQ(groups.rank(), world_rank());
  EXPECT_EQ(groups.coordinate(), mesh.unravel(world_rank()));
  checks::check_all_axis_groups(groups);
  checks::check_group_errors(groups);
}

TEST(ProcessGroupMeshMpi, MeshesOfOneToFourDimensions) {
  const int p = world_size();
  check_mesh(Mesh<Axis<"x", dynamic_extent>>{p});
  if (p % 2 == 0) check_mesh(Mesh<Axis<"x", 2>, Axis<"y", dynamic_extent>>{p / 2});
  if (p == 4) check_mesh(Mesh<Axis<"dp", 2>, Axis<"pp", 1>, Axis<"tp", 2>, Axis<"sp", 1>>{});
  if (p == 8) {
    check_mesh(Mesh<Axis<"dp", 2>, Axis<"pp", 2>, Axis<"tp", 2>>{});
    check_mesh(Mesh<Axis<"dp", 2>, Axis<"pp", 2>, Axis<"tp", 2>, Axis<"sp", 1>>{});
    check_mesh(Mesh<Axis<"dp", 1>, Axis<"pp", 2>, Axis<"tp", 2>, Axis<"sp", 2>>{});
  }
}

TEST(ProcessGroupMeshMpi, FromCommunicatorObjectsAndDeduplication) {
  using Flat = Mesh<Axis<"x", dynamic_extent>, Axis<"one", 1>>;
  const Flat mesh{world_size()};
  MpiCommunicator comm(MPI_COMM_WORLD);
  sw::ProcessGroupMesh<Flat> duplicated(comm, mesh);            // lvalue: a duplicate
  sw::ProcessGroupMesh<Flat> groups(std::move(comm), mesh);     // rvalue: taken over
  EXPECT_EQ(&groups.group_along({"x", "one"}), &groups.world());
  EXPECT_EQ(&groups.group_along({"one", "x"}), &groups.world());
  EXPECT_EQ(&groups.group_along({"x"}), &groups.world());
  EXPECT_EQ(groups.group_along({"one"}).size(), 1);
  EXPECT_EQ(groups.num_groups(), world_size() == 1 ? 1u : 2u);  // at p = 1, {"one"} is the world
  EXPECT_EQ(duplicated.group_along({"x"}).size(), world_size());
  ASSERT_NE(groups.world().target<MpiCommunicator>(), nullptr);
}

TEST(ProcessGroupMeshMpi, IndexSubsets) {
  const int p = world_size();
  sw::ProcessGroupMesh<Mesh<Axis<"pp", dynamic_extent>>> groups(MPI_COMM_WORLD, Mesh<Axis<"pp", dynamic_extent>>{p});
  const std::vector<int> first_and_last = p == 1 ? std::vector<int>{0} : std::vector<int>{0, p - 1};
  sw::AnyCommunicator* ends = groups.group_along_indices("pp", first_and_last);
  const int r = world_rank();
  if (r == 0 || r == p - 1) {
    ASSERT_NE(ends, nullptr);
    EXPECT_EQ(ends->size(), p == 1 ? 1 : 2);
    int sum = r;
    ends->all_reduce(std::span<int>(&sum, 1));
    EXPECT_EQ(sum, p == 1 ? 0 : p - 1);
  } else {
    EXPECT_EQ(ends, nullptr);
  }
}

TEST(ProcessGroupMeshMpi, WrongWorldSizeThrowsOnEveryRank) {
  const int p = world_size();
  using Line = Mesh<Axis<"x", dynamic_extent>>;
  try {
    sw::ProcessGroupMesh<Line> groups(MPI_COMM_WORLD, Line{p + 1});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the mesh has " + std::to_string(p + 1) + " ranks (x=" +
                                         std::to_string(p + 1) + ") but the communicator has " + std::to_string(p)),
              std::string::npos)
        << e.what();
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// ---- ParallelContext ------------------------------------------------------------

using Line = Mesh<Axis<"dp", dynamic_extent>>;

/// getenv with some variables replaced on one rank.
struct FakeEnvironment {
  std::map<std::string, std::string> overrides;
  const char* operator()(const char* name) const {
    if (auto it = overrides.find(name); it != overrides.end()) return it->second.c_str();
    return std::getenv(name);
  }
};

std::vector<sw::ModeBinding> line_bindings() { return {{ParallelMode::data, {"dp"}}}; }

TEST(ParallelContextMpi, FromMpiAgreesWithTheOpenMpiLauncher) {
  const int p = world_size();
  auto context = sw::ParallelContext<Line>::from_mpi(MPI_COMM_WORLD, Line{p}, {{ParallelMode::data, {"dp"}}});
  EXPECT_EQ(context.global_rank(), world_rank());
  EXPECT_EQ(context.group_size(ParallelMode::data), p);
  EXPECT_EQ(context.local_rank(ParallelMode::data), world_rank());
  EXPECT_EQ(context.launcher_environment().launcher, sw::Launcher::openmpi);
  EXPECT_EQ(context.launcher_environment().rank, world_rank());
  EXPECT_EQ(context.node_local_size(), p);  // mpiexec on one machine
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(context.node_local_rank(), std::atoi(local));
  int sum = 1;
  context.group(ParallelMode::data).all_reduce(std::span<int>(&sum, 1));
  EXPECT_EQ(sum, p);
}

/// Every rank throws when one rank's environment contradicts MPI; that rank names the variable.
void expect_rejected_everywhere(int culprit, const FakeEnvironment& fake, const std::string& culprit_text) {
  const int p = world_size();
  const auto bindings = line_bindings();
  try {
    (void)sw::ParallelContext<Line>::from_mpi(MPI_COMM_WORLD, Line{p}, bindings,
                                              world_rank() == culprit ? fake : FakeEnvironment{});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (world_rank() == culprit)
      EXPECT_NE(what.find(culprit_text), std::string::npos) << what;
    else
      EXPECT_NE(what.find("contradicts MPI on rank " + std::to_string(culprit)), std::string::npos) << what;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(ParallelContextMpi, AnInconsistentEnvironmentFailsOnEveryRank) {
  const int p = world_size(), last = p - 1;
  expect_rejected_everywhere(0, FakeEnvironment{{{"OMPI_COMM_WORLD_SIZE", std::to_string(p + 1)}}},
                             "OMPI_COMM_WORLD_SIZE=" + std::to_string(p + 1) + " but MPI says the size of MPI_COMM_WORLD is " +
                                 std::to_string(p));
  // A node-local contradiction (with a consistent but wrong size, so that it parses at any p).
  expect_rejected_everywhere(last, FakeEnvironment{{{"OMPI_COMM_WORLD_SIZE", std::to_string(p + 4)},
                                                    {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(p + 3)},
                                                    {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(p + 4)}}},
                             "OMPI_COMM_WORLD_LOCAL_RANK=" + std::to_string(p + 3) + " but MPI says the node-local rank");
  expect_rejected_everywhere(last, FakeEnvironment{{{"RANK", "abc"}}}, "RANK=\"abc\" is not a non-negative integer");
  expect_rejected_everywhere(0, FakeEnvironment{{{"RANK", std::to_string(p)}}},
                             "OMPI_COMM_WORLD_RANK=0 but RANK=" + std::to_string(p));
}

TEST(ParallelContextMpi, OnASubcommunicatorTheNodeLocalValuesDescribeIt) {
  MPI_Comm halves = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() % 2, world_rank(), &halves);
  int half_size = 0;
  MPI_Comm_size(halves, &half_size);
  {
    auto context = sw::ParallelContext<Line>::from_mpi(halves, Line{half_size}, {{ParallelMode::data, {"dp"}}});
    EXPECT_EQ(context.node_local_size(), half_size);
    EXPECT_EQ(context.node_local_rank(), world_rank() / 2);
  }
  MPI_Comm_free(&halves);
}

TEST(ParallelContextMpi, OverAProcessGroupMeshOfMpi) {
  const int p = world_size();
  sw::ParallelContext<Line> context(sw::ProcessGroupMesh<Line>(MPI_COMM_WORLD, Line{p}), line_bindings());
  EXPECT_EQ(context.node_local_size(), p);  // from MPI_Comm_split_type
  EXPECT_EQ(context.next_rank(ParallelMode::data), (world_rank() + 1) % p);
  EXPECT_EQ(context.prev_rank(ParallelMode::data), (world_rank() + p - 1) % p);
  EXPECT_EQ(context.is_first(ParallelMode::data), world_rank() == 0);
  EXPECT_EQ(context.is_last(ParallelMode::data), world_rank() == p - 1);
}

}  // namespace
