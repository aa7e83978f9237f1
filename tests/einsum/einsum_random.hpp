// The randomized differential test of N-D contractions: random einsum specs (tensors of 1 to 4
// dimensions), random meshes (1-D, 2-D, 3-D), random shardings of A and B, random requested
// outputs (natural, replicated, Partial, ReduceScatter) and variants (standard, ring), random
// extents (uneven included). Each case is planned by the contraction planner and run by the
// executor as values (the same planner and executor that sw::einsum instantiates from types,
// without compiling a type per case), then checked against a serial reference and its counted
// traffic against the model. Both the virtual-cluster and the mpiexec tests draw from here.
#pragma once

#include <algorithm>
#include <array>
#include <complex>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "shardwise/comm/counting.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/kernels/permute.hpp"
#include "shardwise/plan/einsum_plan.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace shardwise::testing {

/// The meshes the drawn cases run on: the extents are the case's (1 to 3 axes).
using EinsumLine = Mesh<Axis<"x", dynamic_extent>>;
using EinsumGrid = Mesh<Axis<"x", dynamic_extent>, Axis<"y", dynamic_extent>>;
using EinsumCube = Mesh<Axis<"x", dynamic_extent>, Axis<"y", dynamic_extent>, Axis<"z", dynamic_extent>>;

/// One drawn case, as values.
struct EinsumCase {
  std::string spec;
  detail::contraction_indices ix{};
  std::vector<int> mesh;  ///< extents of the mesh axes x, y, z (1 to 3 of them)
  detail::tensor_axes a{}, b{}, c{};
  bool natural = true;
  detail::VariantKind variant = detail::VariantKind::standard;
  IndexExtents extents;
  std::uint64_t seed = 0;
  /// The scalar the case runs in: double, std::complex<double> or std::complex<float>.
  enum class Scalar { f64, c128, c64 } scalar = Scalar::f64;

  [[nodiscard]] int ranks() const {
    int p = 1;
    for (int e : mesh) p *= e;
    return p;
  }
  [[nodiscard]] detail::operand_extents operand_extents() const { return detail::operand_extents_of(ix, extents); }
  [[nodiscard]] detail::contraction_plan_data plan() const {
    return detail::plan_contraction(ix, a, b, c, natural, variant);
  }
  [[nodiscard]] std::string describe() const {
    static constexpr std::string_view names[] = {"x", "y", "z"};
    std::ostringstream text;
    text << spec << " on mesh";
    for (int e : mesh) text << " " << e;
    auto sharding = [&](const detail::tensor_axes& t) {
      std::string s = "[";
      for (int d = 0; d < t.rank; ++d) s += (d ? ", " : "") + detail::axes_text_of(t.dim(d), names);
      s += "]";
      if (!t.partial.empty()) s += "+P" + detail::axes_text_of(t.partial, names);
      return s;
    };
    text << ", A" << sharding(a) << " B" << sharding(b) << " C" << sharding(c) << (natural ? " (natural)" : "")
         << (variant == detail::VariantKind::ring ? " ring" : "") << ", extents";
    for (int op = 0; op < 3; ++op) {
      text << (op ? " x " : " ");
      const auto e = operand_extents()[static_cast<std::size_t>(op)];
      for (int d = 0; d < ix.ranks[static_cast<std::size_t>(op)]; ++d) text << (d ? "," : "") << e[static_cast<std::size_t>(d)];
    }
    text << ", data seed " << seed
         << (scalar == Scalar::c128 ? ", complex<double>" : scalar == Scalar::c64 ? ", complex<float>" : ", double");
    const auto p = plan();
    if (p.error.ok()) text << ": " << detail::describe_schedule(p.steps, ix.names, names);
    return text.str();
  }
};

/// Draws a case (its plan may fail: the caller draws again). `meshes`: the meshes to draw
/// from (an MPI run has as many ranks as it has); empty: small 1-D, 2-D and 3-D meshes.
inline EinsumCase draw_einsum_case(std::mt19937_64& draw, const std::vector<std::vector<int>>& meshes = {}) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(draw); };
  EinsumCase c;
  int batch, free_a, free_b, contracted;
  do {
    batch = uniform(0, 2), free_a = uniform(0, 2), free_b = uniform(0, 2), contracted = uniform(0, 2);
  } while (batch + free_a + contracted < 1 || batch + free_a + contracted > 4 || batch + free_b + contracted < 1 ||
           batch + free_b + contracted > 4 || batch + free_a + free_b < 1 || batch + free_a + free_b > 4);
  std::string letters = "abcdefghijklmnopqrstuvwxyz";
  std::shuffle(letters.begin(), letters.end(), draw);
  std::size_t next = 0;
  auto take = [&](int n) {
    std::string s = letters.substr(next, static_cast<std::size_t>(n));
    next += static_cast<std::size_t>(n);
    return s;
  };
  const std::string bl = take(batch), fa = take(free_a), fb = take(free_b), kl = take(contracted);
  std::string sa = bl + fa + kl, sb = bl + fb + kl, sc = bl + fa + fb;
  std::shuffle(sa.begin(), sa.end(), draw);
  std::shuffle(sb.begin(), sb.end(), draw);
  std::shuffle(sc.begin(), sc.end(), draw);
  c.spec = sa + "," + sb + "->" + sc;
  c.ix = detail::parse_einsum_spec(c.spec).indices;

  const int ndim = uniform(1, 3);
  if (!meshes.empty()) c.mesh = meshes[static_cast<std::size_t>(uniform(0, static_cast<int>(meshes.size()) - 1))];
  else if (ndim == 1) c.mesh = {uniform(1, 4)};
  else if (ndim == 2) c.mesh = {uniform(1, 3), uniform(1, 2)};
  else c.mesh = {uniform(1, 2), uniform(1, 2), uniform(1, 2)};

  auto shard = [&](int rank) {
    detail::tensor_axes t;
    t.rank = rank;
    std::vector<int> axes(c.mesh.size());
    for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(i);
    std::shuffle(axes.begin(), axes.end(), draw);
    for (int axis : axes)
      if (uniform(0, 2) > 0) t.dim(uniform(0, rank - 1)).push_back(axis);
    return t;
  };
  c.a = shard(c.ix.ranks[0]);
  c.b = shard(c.ix.ranks[1]);
  // Half the time, B splits a shared (batch or contracted) index as A does: matched splits,
  // pending sums and Partial outputs are then common, not rare.
  if (uniform(0, 1) == 0)
    for (int db = 0; db < c.ix.ranks[1]; ++db) {
      const int da = c.ix.dim_of(Operand::A, c.ix.letter(Operand::B, db));
      if (da < 0 || uniform(0, 1) == 0) continue;
      detail::tensor_axes candidate = c.b;
      for (int d = 0; d < candidate.rank; ++d) candidate.dim(d) = detail::without(candidate.dim(d), c.a.dim(da));
      candidate.dim(db) = c.a.dim(da);
      c.b = candidate;
    }

  const auto natural = detail::natural_output_of(c.ix, c.a, c.b);
  c.c = natural.axes;
  const detail::contraction_plan_data plain =
      detail::plan_contraction(c.ix, c.a, c.b, natural.axes, true, detail::VariantKind::standard);
  const detail::axis_list pending = plain.start[Operand::C].partial;
  // With a pending sum, keeping or scattering it is drawn as often as the other choices.
  switch (pending.empty() ? uniform(0, 3) : uniform(2, 5)) {
    case 0: case 1: case 2: break;  // natural
    case 3:  // replicated
      for (int d = 0; d < c.c.rank; ++d) c.c.dim(d) = {};
      c.natural = false;
      break;
    case 4:  // the pending sum kept
      c.c.partial = pending;
      c.natural = pending.empty();
      break;
    default:  // the pending sum scattered into one index
      if (!pending.empty()) {
        const int d = uniform(0, c.c.rank - 1);
        c.c.dim(d) = detail::concat(c.c.dim(d), pending);
        c.natural = false;
      }
      break;
  }
  if (uniform(0, 4) == 0) c.variant = detail::VariantKind::ring;
  for (char l : c.spec)
    if (detail::is_index_letter(l)) c.extents.set(l, uniform(0, 19) == 0 ? 0 : uniform(1, 6));
  c.seed = draw();
  // Half the cases in double, the others complex (8- and 16-byte scalars in the cost model).
  const int kind = uniform(0, 3);
  c.scalar = kind == 2 ? EinsumCase::Scalar::c128 : kind == 3 ? EinsumCase::Scalar::c64 : EinsumCase::Scalar::f64;
  return c;
}

/// Row-major global data of one operand, the same on every rank.
template <typename Scalar = double>
std::vector<Scalar> random_tensor(const detail::tensor_extents& e, int rank, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Scalar> data(static_cast<std::size_t>(detail::element_count(e, rank)));
  for (Scalar& x : data) {
    if constexpr (detail::is_complex_v<Scalar>) {
      const double re = u(engine), im = u(engine);
      x = Scalar(static_cast<typename Scalar::value_type>(re), static_cast<typename Scalar::value_type>(im));
    } else {
      x = static_cast<Scalar>(u(engine));
    }
  }
  return data;
}

/// C = einsum(A, B) serially, by loops over every index (the reference).
template <typename Scalar>
std::vector<Scalar> serial_einsum(const EinsumCase& c, const std::vector<Scalar>& a, const std::vector<Scalar>& b) {
  const detail::operand_extents e = c.operand_extents();
  std::string all;
  for (char l : c.spec)
    if (detail::is_index_letter(l) && all.find(l) == std::string::npos) all += l;
  std::vector<Scalar> out(static_cast<std::size_t>(detail::element_count(e[2], c.ix.ranks[2])), Scalar(0));
  std::int64_t total = 1;
  for (char l : all) total *= c.extents[l];
  std::array<std::int64_t, 26> value{};
  auto offset = [&](Operand op) {
    std::int64_t at = 0;
    for (int d = 0; d < c.ix.ranks[detail::index_of(op)]; ++d) {
      const char l = c.ix.letter(op, d);
      at = at * c.extents[l] + value[static_cast<std::size_t>(l - 'a')];
    }
    return at;
  };
  for (std::int64_t flat = 0; flat < total; ++flat) {
    std::int64_t rest = flat;
    for (std::size_t i = all.size(); i-- > 0;) {
      const std::int64_t n = c.extents[all[i]];
      value[static_cast<std::size_t>(all[i] - 'a')] = rest % n;
      rest /= n;
    }
    out[static_cast<std::size_t>(offset(Operand::C))] +=
        a[static_cast<std::size_t>(offset(Operand::A))] * b[static_cast<std::size_t>(offset(Operand::B))];
  }
  return out;
}

/// What one rank saw: the relative error (to be at most `tolerance`: 1e-12 in double
/// precision, 1e-5 in single) and the bytes sent against the model.
struct EinsumOutcome {
  double error = 0;
  double tolerance = 1e-12;
  Traffic measured, modeled;
};

/// This rank's block of a row-major global tensor.
template <typename Scalar>
std::vector<Scalar> block_of(const std::vector<Scalar>& global, const detail::tensor_axes& t,
                             const detail::tensor_extents& e, const detail::block_geometry& geo) {
  detail::tensor_extents offsets{};
  for (int d = 0; d < t.rank; ++d) offsets[static_cast<std::size_t>(d)] = geo.offset(e[static_cast<std::size_t>(d)], t.dim(d));
  const detail::tensor_extents local = detail::local_extents(t, e, geo);
  std::vector<Scalar> block(static_cast<std::size_t>(detail::element_count(local, t.rank)));
  detail::copy_box(global.data(), block.data(), e, offsets, local, t.rank, true);
  return block;
}

/// Runs case `c` (whose plan is valid) in Scalar on this rank of `groups`, counting into `counters`.
template <typename Scalar, typename M>
EinsumOutcome run_einsum_case_as(ProcessGroupMesh<M>& groups, const EinsumCase& c, const CommCounters& counters) {
  const detail::contraction_plan_data plan = c.plan();
  const detail::operand_extents e = c.operand_extents();
  const detail::block_geometry geo = groups.geometry();
  const auto a_global = random_tensor<Scalar>(e[0], c.ix.ranks[0], c.seed);
  const auto b_global = random_tensor<Scalar>(e[1], c.ix.ranks[1], c.seed + 1);
  const auto a = block_of(a_global, c.a, e[0], geo);
  const auto b = block_of(b_global, c.b, e[1], geo);

  const detail::program p =
      detail::lower(plan.steps, plan.start, c.ix, 0, detail::dim_order::row_major(c.ix.ranks[0]),
                    detail::dim_order::row_major(c.ix.ranks[1]), {}, detail::dim_order::row_major(c.ix.ranks[2]));
  std::vector<Scalar> out(static_cast<std::size_t>(detail::element_count(detail::local_extents(c.c, e[2], geo), c.ix.ranks[2])));
  EinsumOutcome outcome;
  const Traffic before = counters.total();
  detail::executor<Scalar, true>(p, groups.state(), e, {a.data(), b.data(), nullptr, out.data()}).run();
  outcome.measured = counters.total() - before;
  outcome.modeled = detail::schedule_traffic(plan.steps, plan.start, e, geo, sizeof(Scalar), 0);

  // Gather C (reducing a Partial) with a reshard program, and compare.
  detail::tensor_axes replicated;
  replicated.rank = c.ix.ranks[2];
  const detail::reshard_result gather = detail::reshard_steps(c.c, replicated);
  Schedule steps;
  for (const Step& s : gather.steps) steps.push_back(s);
  detail::operand_axes state;
  state[Operand::C] = c.c;
  const auto order = detail::dim_order::row_major(c.ix.ranks[2]);
  const detail::program g = detail::lower(steps, state, detail::reshard_indices(c.ix.ranks[2]), 0, {}, {}, order, order);
  std::vector<Scalar> whole(static_cast<std::size_t>(detail::element_count(e[2], c.ix.ranks[2])));
  detail::executor<Scalar, false>(g, groups.state(), {{{}, {}, e[2]}}, {nullptr, nullptr, out.data(), whole.data()}).run();
  const auto want = serial_einsum(c, a_global, b_global);
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(whole[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
  }
  outcome.error = scale > 0 ? diff / scale : diff;
  if constexpr (std::is_same_v<Scalar, std::complex<float>>) outcome.tolerance = 1e-5;
  return outcome;
}

/// Runs case `c` (whose plan is valid) in its scalar type on this rank of `groups`.
template <typename M>
EinsumOutcome run_einsum_case(ProcessGroupMesh<M>& groups, const EinsumCase& c, const CommCounters& counters) {
  switch (c.scalar) {
    case EinsumCase::Scalar::c128: return run_einsum_case_as<std::complex<double>>(groups, c, counters);
    case EinsumCase::Scalar::c64: return run_einsum_case_as<std::complex<float>>(groups, c, counters);
    case EinsumCase::Scalar::f64: break;
  }
  return run_einsum_case_as<double>(groups, c, counters);
}

}  // namespace shardwise::testing
