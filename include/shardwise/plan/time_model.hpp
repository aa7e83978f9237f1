// shardwise/plan/time_model.hpp: how long a matmul plan takes on a machine (machine.hpp),
// read off the plan's steps as cost.hpp reads its bytes, for the busiest rank:
//   - a local GEMM: its 2mnk flops (the rank's blocks after the step) at the machine's rate;
//   - a collective (ring AllGather, ReduceScatter, AllReduce): its bytes (cost.hpp, the ring
//     algorithm's) over the link bandwidth plus one latency per message, one after the other;
//   - a ring variant: p - 1 exchanges overlapped with p GEMMs of a block each, the first GEMM
//     (or the last) alone: (p - 1) max(exchange, GEMM) + GEMM;
//   - SUMMA and 2.5D: per panel, A's broadcast, B's, then the panel's GEMM (the executor's
//     broadcasts are blocking); a broadcast on a binomial tree costs ceil(log2 p) times its
//     message, on a pipelined chain once plus the pipeline's fill (p - 2 segments);
//   - a slice: a local copy, nothing.
// Ranks a plan leaves idle are lost work by construction: its mesh's ranks multiply more each.
// What a message costs depends on the network: on a fat tree (full bisection) every message
// crosses 4 links and has one to itself; on a torus the model routes every message of the
// step's pattern (each rank to the next of its group; a binomial round's senders to theirs)
// dimension by dimension along the shorter way, and a message takes the latency of the longest
// route and the bandwidth of the busiest link divided among the messages crossing it. Pure
// compile-time.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "shardwise/layout.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/evaluated_ranks.hpp"
#include "shardwise/plan/machine.hpp"
#include "shardwise/plan/matmul_choice.hpp"
#include "shardwise/plan/matmul_evaluation.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise {

/// The predicted time of a plan: that of its busiest rank, and of it the part spent in GEMMs.
struct PredictedTime {
  double seconds = 0;          ///< from the first step to the last
  double compute_seconds = 0;  ///< the GEMMs alone (the rest is communication not overlapped)
};

namespace detail {

/// What a message of one pattern of concurrent messages costs: the latency of the longest
/// route and the seconds a byte takes through the busiest link.
struct message_cost {
  double latency_seconds = 0;
  double seconds_per_byte = 0;
  [[nodiscard]] constexpr double operator()(std::int64_t bytes) const {
    return latency_seconds + static_cast<double>(bytes) * seconds_per_byte;
  }
};

/// A message with a route and a link of its own (a fat tree).
constexpr message_cost unshared_message(const Machine& machine) {
  return {message_latency_seconds(machine), 1 / machine.link_bytes_per_second};
}

/// On a torus, the messages from every rank of `mesh` whose group rank along `axes` is g
/// with sends(g) to the member target(g): the ranks on hosts 0, 1, ... (x fastest), each routed
/// x, then y, then z, the shorter way round.
template <typename Sends, typename Target>
constexpr message_cost torus_pattern(const Machine& machine, const block_geometry& mesh, const axis_list& axes,
                                     Sends&& sends, Target&& target) {
  const std::array<int, 3>& e = machine.torus_extents;
  const int hosts = e[0] * e[1] * e[2];
  if (hosts <= 0) return unshared_message(machine);
  std::vector<int> load(static_cast<std::size_t>(hosts) * 6, 0);  // per host, dimension and direction
  int busiest = 0, longest = 0;
  const int ranks = mesh.size();
  block_geometry geo = mesh;
  for (int r = 0; r < ranks; ++r) {
    int rest = r;
    for (int a = mesh.ndim; a-- > 0;) {
      geo.coordinate[static_cast<std::size_t>(a)] = rest % mesh.extents[static_cast<std::size_t>(a)];
      rest /= mesh.extents[static_cast<std::size_t>(a)];
    }
    const int g = geo.group_rank(axes);
    if (!sends(g)) continue;
    int from = r % hosts;
    const int to = geo.member(axes, target(g)).flat_rank() % hosts;
    int hops = 0, stride = 1;
    for (int d = 0; d < 3; ++d) {
      const int extent = e[static_cast<std::size_t>(d)];
      const int here = from / stride % extent, there = to / stride % extent;
      const int forward = (there - here + extent) % extent;
      const bool up = forward <= extent - forward;
      for (int step = up ? forward : extent - forward; step > 0; --step) {
        const int at = from / stride % extent;
        const std::size_t link = static_cast<std::size_t>(from) * 6 + static_cast<std::size_t>(2 * d + (up ? 0 : 1));
        busiest = std::max(busiest, ++load[link]);
        from += ((at + (up ? 1 : extent - 1)) % extent - at) * stride;
        ++hops;
      }
      stride *= extent;
    }
    longest = std::max(longest, hops);
  }
  return {longest * machine.link_latency_seconds, std::max(busiest, 1) / machine.link_bytes_per_second};
}

/// A ring over `axes`: every rank sends to the next of its group.
constexpr message_cost ring_message(const Machine& machine, const block_geometry& mesh, const axis_list& axes) {
  if (machine.network != Network::torus) return unshared_message(machine);
  const int size = mesh.group_size(axes);
  return torus_pattern(machine, mesh, axes, [](int) { return true; }, [size](int g) { return (g + 1) % size; });
}

/// A broadcast over `axes`, what each of its rounds costs a message: a binomial tree's
/// ceil(log2 p) rounds, the farthest first as MPICH's and SMPI's send them (with the root at
/// group rank 0: the multiples of 2d send to the rank d after them, d = 2^(rounds-1) ... 1), or
/// the one round of a chain (each rank but the last to the next).
using broadcast_rounds = static_vector<message_cost, 32>;
constexpr broadcast_rounds broadcast_messages(const Machine& machine, const block_geometry& mesh, const axis_list& axes) {
  broadcast_rounds rounds;
  const int size = mesh.group_size(axes);
  if (size <= 1) return rounds;
  if (machine.broadcast == BroadcastAlgorithm::pipelined_chain) {
    rounds.push_back(machine.network != Network::torus
                         ? unshared_message(machine)
                         : torus_pattern(machine, mesh, axes, [size](int g) { return g + 1 < size; },
                                         [](int g) { return g + 1; }));
    return rounds;
  }
  int reach = 1;
  while (2 * reach < size) reach *= 2;
  for (; reach >= 1; reach /= 2)
    rounds.push_back(machine.network != Network::torus
                         ? unshared_message(machine)
                         : torus_pattern(
                               machine, mesh, axes, [reach, size](int g) { return g % (2 * reach) == 0 && g + reach < size; },
                               [reach](int g) { return g + reach; }));
  return rounds;
}

/// One broadcast of `bytes`, along its critical path: every round of a binomial tree in turn;
/// a pipelined chain's segments, the last one passed along group - 1 links behind the first.
constexpr double broadcast_seconds(const Machine& machine, const broadcast_rounds& rounds, std::int64_t bytes, int group) {
  if (group <= 1 || bytes <= 0 || rounds.empty()) return 0;
  if (machine.broadcast == BroadcastAlgorithm::binomial_tree) {
    double total = 0;
    for (const message_cost& round : rounds) total += round(bytes);
    return total;
  }
  const std::int64_t segment = std::max<std::int64_t>(1, machine.chain_segment_bytes);
  const std::int64_t segments = (bytes + segment - 1) / segment;
  return static_cast<double>(segments + group - 2) * rounds[0]((bytes + segments - 1) / segments);
}

/// What each step's messages cost on `mesh` (by step index): its ring's, and its broadcasts'
/// rounds (SUMMA: A's over `axes`, B's over `b_axes`). Computed once per plan, for every rank.
struct step_network {
  message_cost ring{};
  broadcast_rounds a_rounds{}, b_rounds{};
};
using schedule_network = std::array<step_network, Schedule::capacity()>;

constexpr schedule_network network_of(const Machine& machine, const Schedule& steps, const block_geometry& mesh) {
  schedule_network network{};
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    if (step.kind == StepKind::summa_gemm) {
      network[i].a_rounds = broadcast_messages(machine, mesh, step.axes);
      network[i].b_rounds = broadcast_messages(machine, mesh, step.b_axes);
    } else if (step.kind != StepKind::local_gemm && step.kind != StepKind::slice) {
      network[i].ring = ring_message(machine, mesh, step.axes);
    }
  }
  return network;
}

/// A collective's messages one after the other, each as `cost` says.
constexpr double transfer_seconds(const message_cost& cost, const Traffic& t) {
  return static_cast<double>(t.messages) * cost.latency_seconds + static_cast<double>(t.bytes) * cost.seconds_per_byte;
}

/// The flops of the local contraction a contracting step runs on this rank: its blocks of A
/// and B after the step (a ring AllGather's operand gathered) over the k it multiplies (SUMMA:
/// its layer's range).
constexpr double step_flops(const Step& step, const operand_axes& before, const operand_extents& global,
                            const block_geometry& geo) {
  operand_axes after = before;
  apply_step(step, after);
  const std::int64_t m = geo.extent(global[0][0], after[Operand::A].dim(0));
  const std::int64_t n = geo.extent(global[1][1], after[Operand::B].dim(1));
  std::int64_t k = 0;
  if (step.kind == StepKind::summa_gemm) {
    const k_range range = layer_k_range(step, global[0][1], geo);
    k = range.last - range.first;
  } else {
    k = geo.extent(global[0][1], after[Operand::A].dim(1));
  }
  return 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
}

/// SUMMA's (and 2.5D's) panels one after the other: A's broadcast, B's, the panel's GEMM.
constexpr PredictedTime summa_seconds(const Machine& machine, const step_network& network, const Step& step,
                                      const operand_axes& state, const operand_extents& global,
                                      const block_geometry& geo, std::int64_t scalar_bytes, int panel_width) {
  const std::int64_t m_local = geo.extent(global[0][0], state[Operand::A].dim(0));
  const std::int64_t n_local = geo.extent(global[1][1], state[Operand::B].dim(1));
  const int a_group = geo.group_size(step.axes), b_group = geo.group_size(step.b_axes);
  const k_range range = layer_k_range(step, global[0][1], geo);
  PredictedTime t;
  for_each_summa_panel(
      global[0][1], a_group, b_group, panel_width,
      [&](const summa_panel& p) {
        t.seconds += broadcast_seconds(machine, network.a_rounds, m_local * p.width * scalar_bytes, a_group) +
                     broadcast_seconds(machine, network.b_rounds, p.width * n_local * scalar_bytes, b_group);
      },
      range.first, range.last);
  t.compute_seconds = 2.0 * static_cast<double>(m_local) * static_cast<double>(range.last - range.first) *
                      static_cast<double>(n_local) / machine.gemm_flops_per_second;
  t.seconds += t.compute_seconds;
  return t;
}

/// The time of `step` on the rank at `geo`, the shardings before it being `state`.
constexpr PredictedTime step_seconds(const Machine& machine, const step_network& network, const Step& step,
                                     const operand_axes& state, const operand_extents& global,
                                     const block_geometry& geo, std::int64_t scalar_bytes, int panel_width) {
  switch (step.kind) {
    case StepKind::all_gather:
    case StepKind::reduce_scatter:
    case StepKind::all_reduce:
      return {transfer_seconds(network.ring, step_traffic(step, state, global, geo, scalar_bytes, panel_width)), 0};
    case StepKind::slice:
      return {};
    case StepKind::local_gemm: {
      const double gemm = step_flops(step, state, global, geo) / machine.gemm_flops_per_second;
      return {gemm, gemm};
    }
    case StepKind::ring_all_gather_gemm:
    case StepKind::ring_gemm_reduce_scatter: {
      const double gemm = step_flops(step, state, global, geo) / machine.gemm_flops_per_second;
      const int group = geo.group_size(step.axes);
      if (group <= 1) return {gemm, gemm};
      const double exchanges =
          transfer_seconds(network.ring, step_traffic(step, state, global, geo, scalar_bytes, panel_width));
      const double per_gemm = gemm / group, per_exchange = exchanges / (group - 1);
      return {(group - 1) * std::max(per_exchange, per_gemm) + per_gemm, gemm};
    }
    case StepKind::summa_gemm:
      return summa_seconds(machine, network, step, state, global, geo, scalar_bytes, panel_width);
  }
  return {};
}

/// The time of `steps` from `start` on the rank at `geo`: the steps one after the other.
constexpr PredictedTime schedule_seconds(const Machine& machine, const schedule_network& network,
                                         const Schedule& steps, operand_axes state, const operand_extents& global,
                                         const block_geometry& geo, std::int64_t scalar_bytes, int panel_width) {
  PredictedTime total;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const PredictedTime t = step_seconds(machine, network[i], steps[i], state, global, geo, scalar_bytes, panel_width);
    total.seconds += t.seconds;
    total.compute_seconds += t.compute_seconds;
    apply_step(steps[i], state);
  }
  return total;
}

}  // namespace detail

/// The predicted time of `choice` (a plan for `problem` on `mesh`) on `machine`: that of the
/// slowest of the ranks the planner evaluates (evaluated_ranks.hpp; where blocks divide evenly
/// every rank takes as long, and rank 0 is evaluated). Throws std::invalid_argument (in a
/// constant evaluation: a compile error) for a machine it cannot time (detail::check_machine).
constexpr PredictedTime predicted_time(const Machine& machine, const detail::block_geometry& mesh,
                                       const MatmulProblem& problem, const MatmulChoice& choice) {
  using namespace detail;
  check_machine("shardwise::predicted_time", machine);
  const operand_extents extents = matmul_extents(problem.shape);
  const schedule_network network = network_of(machine, choice.plan.steps, mesh);
  auto at = [&](const block_geometry& geo) {
    return schedule_seconds(machine, network, choice.plan.steps, choice.plan.start, extents, geo,
                            problem.scalar_bytes, choice.panel_width);
  };
  if (divides_evenly(mesh, problem.shape)) {
    block_geometry origin = mesh;
    origin.coordinate = {};
    return at(origin);
  }
  PredictedTime slowest;
  for_each_evaluated_rank(mesh, [&](const block_geometry& geo) {
    const PredictedTime t = at(geo);
    if (t.seconds > slowest.seconds) slowest = t;
  });
  return slowest;
}

}  // namespace shardwise
