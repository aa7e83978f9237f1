// The virtual cluster: every collective on 1..16 ranks and every scalar type, the channel
// statistics against traffic.hpp, the counting wrapper, AnyCommunicator, failures
// (a throwing rank, deadlocks, mismatched calls) and subgroups.
#include <gtest/gtest.h>

#include <atomic>
#include <complex>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_checks.hpp"
#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/comm/counting.hpp"
#include "shardwise/comm/virtual_cluster.hpp"
#include "shardwise/traffic.hpp"

namespace {

namespace sw = shardwise;
using sw::VirtualCluster;
using sw::VirtualCommunicator;
using sw::run_virtual_cluster;

static_assert(sw::Communicator<VirtualCommunicator>);
static_assert(sw::Communicator<sw::CountingCommunicator<VirtualCommunicator>>);
static_assert(sw::Communicator<sw::AnyCommunicator>);
static_assert(!sw::Communicator<int>);

template <typename T>
class VirtualCollectives : public testing::Test {};
using Scalars = testing::Types<float, double, int, std::int64_t>;
TYPED_TEST_SUITE(VirtualCollectives, Scalars);

TYPED_TEST(VirtualCollectives, EveryCollectiveOnOneToSixteenRanks) {
  for (int n = 1; n <= 16; ++n)
    run_virtual_cluster(n, [](VirtualCommunicator& comm) { checks::check_collectives<TypeParam>(comm); });
}

TYPED_TEST(VirtualCollectives, ThroughAnyCommunicatorAndCountingWrapper) {
  for (int n : {1, 2, 3, 5, 8}) {
    run_virtual_cluster(n, [](VirtualCommunicator& comm) {
      sw::AnyCommunicator any(sw::CountingCommunicator<VirtualCommunicator>(std::move(comm)));
      checks::check_collectives<TypeParam>(any);
    });
  }
}

TEST(VirtualCluster, ArgumentErrorsAndWrongMessageSizes) {
  for (int n : {1, 2, 3, 4})
    run_virtual_cluster(n, [](VirtualCommunicator& comm) {
      checks::check_argument_errors(comm);
      sw::AnyCommunicator any(std::move(comm));
      checks::check_argument_errors(any);
    });
  EXPECT_THROW(VirtualCluster(0), std::invalid_argument);
}

TEST(VirtualCluster, ComplexNumbersAreSummedNeverCompared) {
  run_virtual_cluster(3, [](VirtualCommunicator& comm) {
    const double r = comm.rank();
    std::vector<std::complex<double>> v{{r, 1.0}, {1.0, -r}};
    comm.all_reduce(v);
    EXPECT_EQ(v[0], std::complex<double>(3.0, 3.0));
    EXPECT_EQ(v[1], std::complex<double>(3.0, -3.0));
    std::vector<std::complex<float>> in(3, {1.0f, 2.0f}), out(1);
    comm.reduce_scatter_block(in, out);
    EXPECT_EQ(out[0], std::complex<float>(3.0f, 6.0f));
    try {
      comm.all_reduce(v, sw::ReduceOp::max);
      ADD_FAILURE() << "max of complex numbers was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_STREQ(e.what(), "shardwise::all_reduce: max of complex numbers is not defined (they have no order); "
                             "reduce them with ReduceOp::sum");
    }
    EXPECT_THROW(comm.reduce_scatter_block(in, out, sw::ReduceOp::min), std::invalid_argument);
  });
}

TEST(VirtualCluster, Subgroups) {
  for (int n = 1; n <= 9; ++n) run_virtual_cluster(n, [](VirtualCommunicator& comm) { checks::check_subgroups(comm); });
  run_virtual_cluster(6, [](VirtualCommunicator& comm) {
    sw::AnyCommunicator any(std::move(comm));
    checks::check_subgroups(any);
  });
}

TEST(VirtualCluster, AllReduceIsBitIdenticalOnEveryRank) {
  for (int n : {2, 3, 7, 16}) {
    run_virtual_cluster(n, [](VirtualCommunicator& comm) {
      std::mt19937_64 random(static_cast<std::uint64_t>(comm.rank()) * 7919u + 1u);
      std::uniform_real_distribution<double> uniform(-1.0, 1.0);
      std::vector<double> x(1000);
      for (double& v : x) v = uniform(random) * 1e3;
      comm.all_reduce(x);
      std::vector<double> all(x.size() * static_cast<std::size_t>(comm.size()));
      comm.all_gather(x, all);
      for (int q = 0; q < comm.size(); ++q)
        EXPECT_EQ(std::memcmp(all.data() + static_cast<std::size_t>(q) * x.size(), x.data(), x.size() * sizeof(double)), 0)
            << "rank " << comm.rank() << " differs from rank " << q;
    });
  }
}

// ---- statistics -----------------------------------------------------------------

/// Channel statistics of one collective equal the ring formulas, and only ring neighbours talk.
TEST(VirtualCluster, ChannelStatisticsFollowTheTrafficFormulas) {
  for (int p = 1; p <= 9; ++p) {
    VirtualCluster cluster(p);
    const std::int64_t n = 37;  // uneven chunks
    auto expect_ring = [&](auto formula, const char* what) {
      for (int r = 0; r < p; ++r) {
        const sw::Traffic want = formula(r);
        EXPECT_EQ(cluster.sent_by(r), want) << what << " p=" << p << " rank " << r;
        if (p > 1) {
          EXPECT_EQ(cluster.channel(r, (r + 1) % p), want) << what;
        }
      }
      cluster.reset_stats();
    };
    cluster.run([&](VirtualCommunicator& comm) {
      std::vector<double> x(static_cast<std::size_t>(n), 1.0);
      comm.all_reduce(x);
    });
    expect_ring([&](int r) { return sw::detail::ring_all_reduce_traffic(n, p, r, 8); }, "all_reduce");

    cluster.run([&](VirtualCommunicator& comm) {
      std::vector<float> in(5), out(5 * static_cast<std::size_t>(p));
      comm.all_gather(in, out);
    });
    expect_ring([&](int) { return sw::detail::ring_all_gather_traffic(5 * p, 5, p, 4); }, "all_gather");

    const std::vector<std::int64_t> counts = checks::uneven_counts(p, 2);
    std::int64_t total = 0;
    for (auto c : counts) total += c;
    cluster.run([&](VirtualCommunicator& comm) {
      std::vector<int> in(static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]));
      std::vector<int> out(static_cast<std::size_t>(total));
      comm.all_gather_v(in, out, counts);
    });
    expect_ring([&](int r) { return sw::detail::ring_all_gather_traffic(total, counts[static_cast<std::size_t>((r + 1) % p)], p, 4); },
                "all_gather_v");

    cluster.run([&](VirtualCommunicator& comm) {
      std::vector<std::int64_t> in(static_cast<std::size_t>(total));
      std::vector<std::int64_t> out(static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]));
      comm.reduce_scatter(in, out, counts);
    });
    expect_ring([&](int r) { return sw::detail::ring_reduce_scatter_traffic(total, counts[static_cast<std::size_t>(r)], p, 8); },
                "reduce_scatter");

    const int root = p / 2;
    cluster.run([&](VirtualCommunicator& comm) {
      std::vector<double> x(static_cast<std::size_t>(n));
      comm.broadcast(x, root);
    });
    expect_ring([&](int r) { return sw::detail::chain_broadcast_traffic(n, p, r, root, 8); }, "broadcast");

    cluster.run([](VirtualCommunicator& comm) { comm.barrier(); });
    for (int r = 0; r < p; ++r) EXPECT_EQ(cluster.sent_by(r), sw::Traffic{}) << "barrier sends nothing";
  }
}

/// Over the virtual backend the counting wrapper's totals equal the channel statistics.
TEST(VirtualCluster, CountingWrapperAgreesWithChannelStatistics) {
  for (int p : {1, 2, 3, 4, 7}) {
    VirtualCluster cluster(p);
    std::vector<sw::CommCounters> counted(static_cast<std::size_t>(p));
    cluster.run([&](VirtualCommunicator& comm) {
      const int r = comm.rank();
      sw::CountingCommunicator<VirtualCommunicator> counting(std::move(comm));
      checks::check_collectives<double>(counting);
      checks::check_collectives<int>(counting);
      checks::check_subgroups(counting);  // subgroups count into the same counters
      counted[static_cast<std::size_t>(r)] = counting.counters();
    });
    for (int r = 0; r < p; ++r) {
      const sw::CommCounters& c = counted[static_cast<std::size_t>(r)];
      EXPECT_EQ(c.total(), cluster.sent_by(r)) << "p=" << p << " rank " << r;
      EXPECT_GT(c.all_reduce.calls, 0);
      EXPECT_GT(c.all_gather.calls, 0);
      EXPECT_GT(c.reduce_scatter.calls, 0);
      EXPECT_GT(c.broadcast.calls, 0);
      EXPECT_GT(c.point_to_point.calls, 0);
      EXPECT_GT(c.barrier.calls, 0);
      if (p > 1) {
        EXPECT_GT(c.total().messages, 0);
      }
    }
  }
}

// ---- failures -------------------------------------------------------------------

TEST(VirtualCluster, AThrowingRankFailsEveryPendingCollective) {
  for (int p : {2, 5, 16}) {
    const int culprit = p - 1;
    std::atomic<int> woken{0};
    VirtualCluster cluster(p);
    try {
      cluster.run([&](VirtualCommunicator& comm) {
        if (comm.rank() == culprit) throw std::runtime_error("boom on purpose");
        std::vector<double> x(100, 1.0);
        try {
          comm.all_reduce(x);  // can never complete
        } catch (const sw::RemoteRankFailure& e) {
          EXPECT_EQ(e.failed_rank(), culprit);
          EXPECT_NE(std::string(e.what()).find("boom on purpose"), std::string::npos) << e.what();
          ++woken;
          throw;
        }
      });
      ADD_FAILURE() << "run() did not throw";
    } catch (const sw::RemoteRankFailure& e) {
      EXPECT_EQ(e.failed_rank(), culprit);
      EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(culprit) + " failed first: boom on purpose");
      EXPECT_THROW(std::rethrow_exception(e.first_exception()), std::runtime_error);
    }
    EXPECT_EQ(woken.load(), p - 1);
    // The cluster is reusable after a failure.
    cluster.run([](VirtualCommunicator& comm) { checks::check_collectives<int>(comm); });
  }
}

TEST(VirtualCluster, FailureWakesReceiversBarriersAndGroupCreation) {
  VirtualCluster cluster(4);
  EXPECT_THROW(cluster.run([](VirtualCommunicator& comm) {
                 std::vector<int> x(3);
                 switch (comm.rank()) {
                   case 0: comm.recv(x, 3, 0); break;
                   case 1: comm.barrier(); break;
                   case 2: (void)comm.create_group(std::vector<int>{2, 3}); break;
                   default: throw std::logic_error("rank 3 gives up");
                 }
               }),
               sw::RemoteRankFailure);
}

TEST(VirtualCluster, OperationsAfterAFailureThrowAtOnce) {
  std::atomic<int> threw{0};
  EXPECT_THROW(run_virtual_cluster(2,
                                   [&](VirtualCommunicator& comm) {
                                     if (comm.rank() == 0) throw std::runtime_error("first");
                                     std::vector<int> x(1);
                                     try {
                                       comm.recv(x, 0, 0);
                                     } catch (const sw::RemoteRankFailure&) {
                                       // Sending never blocks, but the cluster has failed: it throws too.
                                       EXPECT_THROW(comm.send(x, 0, 0), sw::RemoteRankFailure);
                                       ++threw;
                                     }
                                   }),
               sw::RemoteRankFailure);
  EXPECT_EQ(threw.load(), 1);
}

TEST(VirtualCluster, DeadlockInReceivesIsReportedNotHung) {
  try {
    run_virtual_cluster(3, [](VirtualCommunicator& comm) {
      std::vector<double> x(2);
      comm.recv(x, (comm.rank() + 1) % comm.size(), 42);  // everyone waits for the next one
    });
    ADD_FAILURE() << "no deadlock reported";
  } catch (const sw::DeadlockError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0: waits in recv from rank 1 with tag 42"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 2: waits in recv from rank 0 with tag 42"), std::string::npos) << what;
  }
}

TEST(VirtualCluster, DeadlockOnAFinishedRankIsReported) {
  try {
    run_virtual_cluster(3, [](VirtualCommunicator& comm) {
      if (comm.rank() != 1) comm.barrier();  // rank 1 never comes
    });
    ADD_FAILURE() << "no deadlock reported";
  } catch (const sw::DeadlockError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1: has finished"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0: waits in barrier on communicator [0 1 2] (2 of 3 arrived)"), std::string::npos) << what;
  }
  try {
    run_virtual_cluster(2, [](VirtualCommunicator& comm) {
      if (comm.rank() == 0) (void)comm.create_group(std::vector<int>{0, 1});
    });
    ADD_FAILURE() << "no deadlock reported";
  } catch (const sw::DeadlockError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0: waits in create_group of [0 1]"), std::string::npos) << e.what();
  }
}

TEST(VirtualCluster, MismatchedCollectivesAreCaught) {
  // Different collectives never pair up: a deadlock naming both.
  try {
    run_virtual_cluster(2, [](VirtualCommunicator& comm) {
      std::vector<double> x(4), y(8);
      if (comm.rank() == 0)
        comm.all_reduce(x);
      else
        comm.all_gather(x, y);
    });
    ADD_FAILURE() << "mismatch not reported";
  } catch (const sw::DeadlockError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("waits in all_reduce for data from rank 1"), std::string::npos) << what;
    EXPECT_NE(what.find("waits in all_gather for data from rank 0"), std::string::npos) << what;
  }
  // The same collective with different sizes: the receiving rank says what it expected.
  try {
    run_virtual_cluster(2, [](VirtualCommunicator& comm) {
      std::vector<float> x(comm.rank() == 0 ? 4 : 6);
      comm.broadcast(x, 0);
    });
    ADD_FAILURE() << "mismatch not reported";
  } catch (const sw::RemoteRankFailure& e) {
    EXPECT_EQ(e.failed_rank(), 1);
    EXPECT_NE(std::string(e.what()).find("expected 6 float from rank 0 but received 4 float"), std::string::npos)
        << e.what();
  }
}

TEST(VirtualCluster, AMessageOfTheWrongSizeOrTypeIsAnError) {
  run_virtual_cluster(2, [](VirtualCommunicator& comm) {
    if (comm.rank() == 0) {
      comm.send(std::vector<int>(3), 1, 5);
      comm.send(std::vector<float>(2), 1, 5);
      return;
    }
    std::vector<int> two(2);
    try {
      comm.recv(two, 0, 5);
      ADD_FAILURE() << "no error";
    } catch (const sw::CommError& e) {
      EXPECT_EQ(std::string(e.what()),
                "shardwise::recv (virtual cluster): rank 1 expected 2 int from rank 0 but received 3 int; a message "
                "must be received with exactly its size and type");
    }
    EXPECT_THROW(comm.recv(two, 0, 5), sw::CommError);  // 2 floats are not 2 ints
  });
}

TEST(VirtualCluster, UserTagsNeverMatchCollectiveTraffic) {
  run_virtual_cluster(3, [](VirtualCommunicator& comm) {
    const int right = (comm.rank() + 1) % 3, left = (comm.rank() + 2) % 3;
    // A user message with tag 0 (the all_reduce collective's internal tag) is queued first.
    std::vector<double> user(4, 100.0 + comm.rank()), got(4);
    comm.send(user, right, 0);
    std::vector<double> x(4, 1.0);
    comm.all_reduce(x);
    EXPECT_EQ(x, std::vector<double>(4, 3.0));
    comm.recv(got, left, 0);
    EXPECT_EQ(got, std::vector<double>(4, 100.0 + left));
  });
}

TEST(VirtualCluster, GroupsOfTheSameMembersAreDistinctContexts) {
  VirtualCluster cluster(4);
  cluster.run([](VirtualCommunicator& comm) {
    if (comm.rank() > 1) return;
    VirtualCommunicator a = comm.create_group(std::vector<int>{0, 1});
    VirtualCommunicator b = comm.create_group(std::vector<int>{1, 0});
    EXPECT_EQ(b.rank(), 1 - comm.rank());
    EXPECT_EQ(std::vector<int>(b.world_ranks().begin(), b.world_ranks().end()), (std::vector<int>{1, 0}));
    // A message on `a` is not visible on `b`, even with the same tag and peer.
    std::vector<int> one{comm.rank()}, got_a(1), got_b(1);
    a.send(one, 1 - a.rank(), 0);
    b.send(one, 1 - b.rank(), 0);
    b.recv(got_b, 1 - b.rank(), 0);
    a.recv(got_a, 1 - a.rank(), 0);
    EXPECT_EQ(got_a[0], 1 - comm.rank());
    EXPECT_EQ(got_b[0], 1 - comm.rank());
  });
  // Only ranks 0 and 1 talked, to each other.
  EXPECT_EQ(cluster.channel(0, 1), (sw::Traffic{8, 2}));
  EXPECT_EQ(cluster.channel(1, 0), (sw::Traffic{8, 2}));
  EXPECT_EQ(cluster.sent_by(2), sw::Traffic{});
}

}  // namespace
