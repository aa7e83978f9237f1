// shardwise/plan/machine.hpp: a machine as the time model (time_model.hpp) sees it: how fast a
// rank multiplies, how fast and how soon a link delivers, the network's shape and how the MPI
// library broadcasts. A constexpr value: the planner minimizes predicted time on it
// (AnyMeshOptions::machine) instead of bytes.
//
//   constexpr sw::Machine cluster{.gemm_flops_per_second = 37.5e9, .link_bytes_per_second = 25e9,
//                                 .link_latency_seconds = 0.25e-6};
//
// `simulation/simulate machine` measures this machine's values (GEMM rate; MPI bandwidth and
// latency between two ranks) and prints them as such an initializer. The named machines below
// are the SimGrid platforms the simulated table ran on (tests check them against the XML).
// Pure compile-time.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace shardwise {

/// The shape of the network between ranks.
enum class Network : unsigned char {
  fat_tree,  ///< every rank equally far: host, leaf switch, spine, leaf switch, host
  torus      ///< hosts on a 3-D torus (Machine::torus_extents), a link between neighbours
};

/// How the MPI library broadcasts (SUMMA's and 2.5D's panels).
enum class BroadcastAlgorithm : unsigned char {
  binomial_tree,   ///< the root's message passes ceil(log2 p) times along the critical path (SMPI's default)
  pipelined_chain  ///< root -> root+1 -> ...: the message once, plus the pipeline's fill (Open MPI's pipeline)
};

/// One rank's compute rate and the network it sends on.
struct Machine {
  double gemm_flops_per_second = 0;  ///< one rank's GEMM rate (2mnk flops per m x k x n product)
  double link_bytes_per_second = 0;  ///< one link, one direction
  double link_latency_seconds = 0;   ///< one link (a hop)
  Network network = Network::fat_tree;                               ///< the network's shape
  BroadcastAlgorithm broadcast = BroadcastAlgorithm::binomial_tree;  ///< how MPI_Bcast sends
  /// A pipelined chain's segment (Open MPI's ompi_pipeline: 128 KiB).
  std::int64_t chain_segment_bytes = std::int64_t{128} << 10;
  /// A torus's hosts along x, y and z; rank r on host r, x fastest (as simulation/simulate
  /// places them). Unused on a fat tree.
  std::array<int, 3> torus_extents{};

  /// Equal values.
  friend constexpr bool operator==(const Machine&, const Machine&) = default;
};

/// The latency of one message on links of its own: the links it crosses times a link's. A fat
/// tree of two levels routes through host, leaf, spine, leaf, host (4 links); on a torus, one
/// hop (the time model routes a torus's messages: time_model.hpp).
constexpr double message_latency_seconds(const Machine& machine) {
  return machine.link_latency_seconds * (machine.network == Network::fat_tree ? 4 : 1);
}

namespace detail {

/// Refuses a machine the time model cannot time (std::invalid_argument naming `who`; in a
/// constant evaluation, a compile error): a rate or bandwidth of 0 or less, a negative latency,
/// a torus without its extents.
constexpr void check_machine(std::string_view who, const Machine& machine) {
  if (!(machine.gemm_flops_per_second > 0)) throw std::invalid_argument(std::string(who) + ": the machine's gemm_flops_per_second is not above 0; give one rank's GEMM rate in flop/s");
  if (!(machine.link_bytes_per_second > 0)) throw std::invalid_argument(std::string(who) + ": the machine's link_bytes_per_second is not above 0; give a link's bandwidth in bytes/s");
  if (!(machine.link_latency_seconds >= 0)) throw std::invalid_argument(std::string(who) + ": the machine's link_latency_seconds is negative; give a link's latency in seconds, 0 or more");
  if (machine.network == Network::torus && !(machine.torus_extents[0] > 0 && machine.torus_extents[1] > 0 && machine.torus_extents[2] > 0)) throw std::invalid_argument(std::string(who) + ": the machine is a torus without torus_extents; give its hosts along x, y and z");
}

}  // namespace detail

/// The machines of the simulated table (simulation/platforms/*_cluster.xml), each rank on a host of its own.
namespace machines {

/// simulation/platforms/fat_tree_cluster.xml: InfiniBand HDR, 25 GB/s per port, 0.25 us per link, a
/// host at 37.5 GFLOP/s (one core's OpenBLAS dgemm), SMPI's default (binomial) broadcast.
inline constexpr Machine simulated_fat_tree{.gemm_flops_per_second = 37.5e9,
                                            .link_bytes_per_second = 25e9,
                                            .link_latency_seconds = 0.25e-6,
                                            .network = Network::fat_tree};

/// simulation/platforms/torus_cluster.xml: a 16 x 16 x 16 torus of Tofu D links, 6.8 GB/s and 0.5 us
/// per hop, hosts as above.
inline constexpr Machine simulated_torus{.gemm_flops_per_second = 37.5e9,
                                         .link_bytes_per_second = 6.8e9,
                                         .link_latency_seconds = 0.5e-6,
                                         .network = Network::torus,
                                         .torus_extents = {16, 16, 16}};

}  // namespace machines

}  // namespace shardwise
