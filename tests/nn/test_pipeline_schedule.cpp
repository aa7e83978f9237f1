// Pipeline schedules: GPipe against its closed form (forward of run r on stage i at cycle
// i + r, backward at R + 2S - 2 - i + r), the seed's formula, 1F1B's
// order and memory, makespans, invariants, and an independent earliest-cycle simulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "shardwise/nn/pipeline_schedule.hpp"

namespace sw = shardwise;
using sw::PipelineAction;
using sw::schedule::GPipe;
using sw::schedule::OneFOneB;

template <int S, int R>
using GP = sw::Pipeline<S, R, GPipe>;
template <int S, int R>
using OFOB = sw::Pipeline<S, R, OneFOneB>;

// ---- compile-time checks, for every (S, R) of the brief --------------------------
// R < S, R = S, R = 2S, R > 2S, one stage, odd shapes, many stages with few batches.

constexpr int min_int(int a, int b) { return a < b ? a : b; }

// GPipe is exactly the closed form: F at i + r, B at R + 2S - 2 - i + r.
template <int S, int R>
constexpr bool gpipe_matches_design() {
  using P = GP<S, R>;
  for (int i = 0; i < S; ++i)
    for (int r = 0; r < R; ++r) {
      if (P::forward_cycle(i, r) != i + r) return false;
      if (P::backward_cycle(i, r) != R + 2 * S - 2 - i + r) return false;
      if (P::step(i, i + r) != sw::PipelineStep{PipelineAction::forward, r}) return false;
      if (P::step(i, R + 2 * S - 2 - i + r) != sw::PipelineStep{PipelineAction::backward, r})
        return false;
    }
  return true;
}

// The seed's backward cycle, 2(R - 1) - i + r.
constexpr int seed_backward_cycle(int R, int stage, int micro_batch) {
  return 2 * (R - 1) - stage + micro_batch;
}

template <int S, int R>
constexpr bool seed_agrees_with_gpipe() {
  for (int i = 0; i < S; ++i)
    for (int r = 0; r < R; ++r)
      if (GP<S, R>::backward_cycle(i, r) != seed_backward_cycle(R, i, r)) return false;
  return true;
}

// Both schedules have makespan 2(R + S - 1) and bubble (S - 1) / (R + S - 1);
// GPipe keeps R activations on every stage, 1F1B min(S - i, R) <= S on stage i.
template <int S, int R>
constexpr bool shape_facts() {
  if (GP<S, R>::cycles != 2 * (R + S - 1) || OFOB<S, R>::cycles != 2 * (R + S - 1)) return false;
  if (GP<S, R>::stages != S || GP<S, R>::micro_batches != R) return false;
  for (int i = 0; i < S; ++i) {
    if (GP<S, R>::peak_in_flight(i) != R) return false;
    if (OFOB<S, R>::peak_in_flight(i) != min_int(S - i, R)) return false;
    if (OFOB<S, R>::peak_in_flight(i) > S) return false;
  }
  return true;
}

// The invariants, re-checked here from the public table (the class static_asserts them too).
template <typename P>
constexpr bool invariants_hold() {
  constexpr int S = P::stages, R = P::micro_batches;
  for (int i = 0; i < S; ++i) {
    int forwards[R]{}, backwards[R]{};
    for (int c = 0; c < P::cycles; ++c) {
      const auto step = P::step(i, c);  // one cell per (stage, cycle): one thing at a time
      if (step.action == PipelineAction::forward) ++forwards[step.micro_batch];
      if (step.action == PipelineAction::backward) ++backwards[step.micro_batch];
      if (step.action == PipelineAction::idle && step.micro_batch != -1) return false;
    }
    for (int r = 0; r < R; ++r)
      if (forwards[r] != 1 || backwards[r] != 1) return false;
  }
  for (int i = 0; i < S; ++i)
    for (int r = 0; r < R; ++r) {
      if (i > 0 && P::forward_cycle(i, r) <= P::forward_cycle(i - 1, r)) return false;
      if (i + 1 < S && P::backward_cycle(i, r) <= P::backward_cycle(i + 1, r)) return false;
      if (P::backward_cycle(i, r) <= P::forward_cycle(i, r)) return false;
    }
  return true;
}

// 1F1B's order on each stage: min(S - i, R) forwards, then B, F, B, F, ..., then backwards.
template <int S, int R>
constexpr bool one_f_one_b_order() {
  using P = OFOB<S, R>;
  for (int i = 0; i < S; ++i) {
    const int warmup = min_int(S - i, R);
    int next_forward = 0, next_backward = 0, k = 0;
    for (int c = 0; c < P::cycles; ++c) {
      const auto step = P::step(i, c);
      if (step.action == PipelineAction::idle) continue;
      bool expect_forward;
      if (k < warmup) expect_forward = true;
      else if (next_forward == R) expect_forward = false;                  // cool-down
      else expect_forward = (k - warmup) % 2 == 1;                         // B, F, B, F, ...
      if (expect_forward != (step.action == PipelineAction::forward)) return false;
      if (step.micro_batch != (expect_forward ? next_forward++ : next_backward++)) return false;
      ++k;
    }
    if (k != 2 * R) return false;
  }
  return true;
}

template <int S, int R>
constexpr bool all_facts() {
  return gpipe_matches_design<S, R>() && shape_facts<S, R>() && invariants_hold<GP<S, R>>() &&
         invariants_hold<OFOB<S, R>>() && one_f_one_b_order<S, R>();
}

static_assert(all_facts<4, 2>());   // R < S
static_assert(all_facts<4, 3>());   // R < S
static_assert(all_facts<4, 4>());   // R = S
static_assert(all_facts<4, 8>());   // R = 2S
static_assert(all_facts<4, 11>());  // R > 2S
static_assert(all_facts<1, 1>());
static_assert(all_facts<1, 5>());
static_assert(all_facts<3, 7>());
static_assert(all_facts<8, 3>());
static_assert(all_facts<2, 1>());
static_assert(all_facts<16, 64>());  // the size the tables are meant to stay cheap at

// The seed's 2(R - 1) - i + r agrees with the closed form when R = 2S, and only then.
static_assert(seed_agrees_with_gpipe<4, 8>() && seed_agrees_with_gpipe<1, 2>() &&
              seed_agrees_with_gpipe<3, 6>() && seed_agrees_with_gpipe<8, 16>());
static_assert(!seed_agrees_with_gpipe<4, 2>() && !seed_agrees_with_gpipe<4, 4>() &&
              !seed_agrees_with_gpipe<4, 7>() && !seed_agrees_with_gpipe<4, 9>() &&
              !seed_agrees_with_gpipe<4, 11>() && !seed_agrees_with_gpipe<1, 1>() &&
              !seed_agrees_with_gpipe<1, 5>() && !seed_agrees_with_gpipe<3, 7>() &&
              !seed_agrees_with_gpipe<8, 3>());

// The reported numbers: (4, 8) and (4, 3).
static_assert(GP<4, 8>::cycles == 22 && OFOB<4, 8>::cycles == 22);
static_assert(GP<4, 3>::cycles == 12 && OFOB<4, 3>::cycles == 12);
static_assert(OFOB<4, 8>::peak_in_flight(0) == 4 && OFOB<4, 8>::peak_in_flight(3) == 1);
static_assert(OFOB<4, 3>::peak_in_flight(0) == 3 && OFOB<4, 3>::peak_in_flight(1) == 3 &&
              OFOB<4, 3>::peak_in_flight(2) == 2 && OFOB<4, 3>::peak_in_flight(3) == 1);
static_assert(GP<4, 8>::bubble_fraction() == 3.0 / 11.0 && OFOB<4, 8>::bubble_fraction() == 3.0 / 11.0);

// The PipelineStage view.
static_assert(GP<4, 8>::stage(2).is_forward(2) && GP<4, 8>::stage(2).micro_batch(2) == 0);
static_assert(GP<4, 8>::stage(2).is_backward(8 + 8 - 2 - 2) && GP<4, 8>::stage(2).is_idle(10));
static_assert(OFOB<4, 8>::stage(3).is_backward(4) && OFOB<4, 8>::stage(3).micro_batch(4) == 0);
static_assert(OFOB<4, 8>::stage(0).is_first() && OFOB<4, 8>::stage(3).is_last());
static_assert(OFOB<4, 8>::stage(0).in_flight(6) == 4 && OFOB<4, 8>::stage(0).in_flight(7) == 3);

// Out of range is not a constant expression (std::out_of_range at run time).
template <int Stage, int Cycle>
concept step_is_constant = requires { typename std::integral_constant<int, GP<4, 3>::step(Stage, Cycle).micro_batch>; };
static_assert(step_is_constant<0, 0> && step_is_constant<3, 11>);
static_assert(!step_is_constant<4, 0> && !step_is_constant<-1, 0>);
static_assert(!step_is_constant<0, 12> && !step_is_constant<0, -1>);

// Only the two schedules are accepted.
static_assert(sw::PipelineSchedule<GPipe> && sw::PipelineSchedule<OneFOneB>);
static_assert(!sw::PipelineSchedule<int>);

// ---- the validator catches a wrong formula: the seed's, whenever R != 2S ----------------
template <int S, int R, int Cycles>
constexpr sw::detail::schedule_check check_seed() {
  sw::detail::cycle_table<S, R> table;
  for (int i = 0; i < S; ++i)
    for (int r = 0; r < R; ++r) {
      table.forward[table.at(i, r)] = i + r;
      table.backward[table.at(i, r)] = seed_backward_cycle(R, i, r);
    }
  return sw::detail::check_schedule(table, sw::detail::build_steps<S, R, Cycles>(table));
}
static_assert(check_seed<4, 8, 64>().ok());  // R = 2S: the seed is right
// R = S: the last stage's backward of r lands on its own forward of r.
static_assert(!check_seed<4, 4, 64>().one_op_per_cycle && !check_seed<4, 4, 64>().each_once &&
              !check_seed<4, 4, 64>().backward_after_successor);
// R < S: the last stage's backward of micro-batch 0 would run at 2(2 - 1) - 3 = -1,
// before cycle 0 and before its own forward.
static_assert(!check_seed<4, 2, 64>().in_range && !check_seed<4, 2, 64>().backward_after_own_forward);
// R > 2S: valid, but the backwards start later than they could: makespan 3R - 2 > 2(R + S - 1).
static_assert(check_seed<4, 11, 64>().ok());
static_assert([] {
  sw::detail::cycle_table<4, 11> seed;
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 11; ++r) {
      seed.forward[seed.at(i, r)] = i + r;
      seed.backward[seed.at(i, r)] = seed_backward_cycle(11, i, r);
    }
  return seed.makespan() == 3 * 11 - 2 && seed.makespan() > GP<4, 11>::cycles;
}());

// ---- run-time tests -------------------------------------------------------------------

// The table as text, one row per stage: "F0 F1 .  B0".
template <typename P>
std::vector<std::string> diagram() {
  std::vector<std::string> rows;
  for (int i = 0; i < P::stages; ++i) {
    std::string row;
    for (int c = 0; c < P::cycles; ++c) {
      const auto step = P::step(i, c);
      std::string cell = step.action == PipelineAction::forward    ? "F" + std::to_string(step.micro_batch)
                         : step.action == PipelineAction::backward ? "B" + std::to_string(step.micro_batch)
                                                                   : ".";
      cell.resize(3, ' ');
      row += cell;
    }
    while (!row.empty() && row.back() == ' ') row.pop_back();
    rows.push_back(row);
  }
  return rows;
}

TEST(PipelineSchedule, GPipeDiagramFourStagesThreeMicroBatches) {
  const std::vector<std::string> expected = {
      "F0 F1 F2 .  .  .  .  .  .  B0 B1 B2",
      ".  F0 F1 F2 .  .  .  .  B0 B1 B2 .",
      ".  .  F0 F1 F2 .  .  B0 B1 B2 .  .",
      ".  .  .  F0 F1 F2 B0 B1 B2 .  .  .",
  };
  EXPECT_EQ((diagram<GP<4, 3>>()), expected);
}

TEST(PipelineSchedule, OneFOneBDiagramFourStagesThreeMicroBatches) {
  const std::vector<std::string> expected = {
      "F0 F1 F2 .  .  .  .  B0 .  B1 .  B2",
      ".  F0 F1 F2 .  .  B0 .  B1 .  B2 .",
      ".  .  F0 F1 .  B0 F2 B1 .  B2 .  .",
      ".  .  .  F0 B0 F1 B1 F2 B2 .  .  .",
  };
  EXPECT_EQ((diagram<OFOB<4, 3>>()), expected);
}

TEST(PipelineSchedule, OneFOneBDiagramFourStagesEightMicroBatches) {
  const std::vector<std::string> expected = {
      "F0 F1 F2 F3 .  .  .  B0 F4 B1 F5 B2 F6 B3 F7 B4 .  B5 .  B6 .  B7",
      ".  F0 F1 F2 .  .  B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 .  B6 .  B7 .",
      ".  .  F0 F1 .  B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 .  B7 .  .",
      ".  .  .  F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 .  .  .",
  };
  EXPECT_EQ((diagram<OFOB<4, 8>>()), expected);
}

// An independent derivation: give each stage its op order and run every op at the
// earliest cycle its dependencies allow (sends land between cycles). The closed
// formulas in the header must be exactly this, i.e. no op could run any earlier.
struct Simulated {
  std::vector<std::vector<int>> forward, backward;
  int cycles = 0;
};

Simulated simulate(int S, int R, bool one_f_one_b) {
  std::vector<std::vector<std::pair<bool, int>>> order(static_cast<std::size_t>(S));  // (is_forward, r)
  for (int i = 0; i < S; ++i) {
    auto& o = order[static_cast<std::size_t>(i)];
    if (!one_f_one_b) {
      for (int r = 0; r < R; ++r) o.emplace_back(true, r);
      for (int r = 0; r < R; ++r) o.emplace_back(false, r);
      continue;
    }
    const int warmup = std::min(S - i, R);
    int f = 0;
    for (; f < warmup; ++f) o.emplace_back(true, f);
    for (int b = 0; b < R; ++b) {
      o.emplace_back(false, b);
      if (f < R) o.emplace_back(true, f++);
    }
  }
  Simulated sim{std::vector<std::vector<int>>(static_cast<std::size_t>(S), std::vector<int>(static_cast<std::size_t>(R), -1)),
                std::vector<std::vector<int>>(static_cast<std::size_t>(S), std::vector<int>(static_cast<std::size_t>(R), -1)), 0};
  std::vector<std::size_t> next(static_cast<std::size_t>(S), 0);
  auto done_before = [](int cycle_done, int now) { return cycle_done >= 0 && cycle_done < now; };
  for (int now = 0;; ++now) {
    bool remaining = false;
    std::vector<std::pair<int, std::pair<bool, int>>> ready;
    for (int i = 0; i < S; ++i) {
      const auto ui = static_cast<std::size_t>(i);
      if (next[ui] == order[ui].size()) continue;
      remaining = true;
      const auto [is_forward, r] = order[ui][next[ui]];
      const auto ur = static_cast<std::size_t>(r);
      const bool ok = is_forward ? (i == 0 || done_before(sim.forward[ui - 1][ur], now))
                                 : (i == S - 1 ? done_before(sim.forward[ui][ur], now)
                                               : done_before(sim.backward[ui + 1][ur], now));
      if (ok) ready.push_back({i, {is_forward, r}});
    }
    if (!remaining) {
      sim.cycles = now;
      return sim;
    }
    for (const auto& [i, op] : ready) {
      (op.first ? sim.forward : sim.backward)[static_cast<std::size_t>(i)][static_cast<std::size_t>(op.second)] = now;
      ++next[static_cast<std::size_t>(i)];
    }
    if (now > 10 * (R + S)) {
      ADD_FAILURE() << "simulation stuck";
      return sim;
    }
  }
}

template <typename P>
void expect_matches_simulation(bool one_f_one_b) {
  const Simulated sim = simulate(P::stages, P::micro_batches, one_f_one_b);
  EXPECT_EQ(P::cycles, sim.cycles) << "S=" << P::stages << " R=" << P::micro_batches;
  for (int i = 0; i < P::stages; ++i)
    for (int r = 0; r < P::micro_batches; ++r) {
      EXPECT_EQ(P::forward_cycle(i, r), sim.forward[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)])
          << "S=" << P::stages << " R=" << P::micro_batches << " stage " << i << " micro-batch " << r;
      EXPECT_EQ(P::backward_cycle(i, r), sim.backward[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)])
          << "S=" << P::stages << " R=" << P::micro_batches << " stage " << i << " micro-batch " << r;
    }
}

template <int S, int R>
void expect_both_match_simulation() {
  expect_matches_simulation<GP<S, R>>(false);
  expect_matches_simulation<OFOB<S, R>>(true);
}

TEST(PipelineSchedule, FormulasAreTheEarliestCyclesOfEachOrder) {
  expect_both_match_simulation<4, 2>();
  expect_both_match_simulation<4, 3>();
  expect_both_match_simulation<4, 4>();
  expect_both_match_simulation<4, 8>();
  expect_both_match_simulation<4, 11>();
  expect_both_match_simulation<1, 1>();
  expect_both_match_simulation<1, 5>();
  expect_both_match_simulation<3, 7>();
  expect_both_match_simulation<8, 3>();
  expect_both_match_simulation<2, 1>();
  expect_both_match_simulation<5, 5>();
  expect_both_match_simulation<16, 64>();
}

TEST(PipelineSchedule, PeakInFlightIsTheMaximumOfInFlight) {
  auto check = [](auto pipeline) {
    using P = decltype(pipeline);
    for (int i = 0; i < P::stages; ++i) {
      int peak = 0;
      for (int c = 0; c < P::cycles; ++c) peak = std::max(peak, P::in_flight(i, c));
      EXPECT_EQ(P::peak_in_flight(i), peak) << "stage " << i;
      EXPECT_EQ(P::in_flight(i, P::cycles - 1), 0) << "stage " << i << " keeps an activation";
    }
  };
  check(GP<4, 8>{});
  check(OFOB<4, 8>{});
  check(GP<4, 3>{});
  check(OFOB<4, 3>{});
  check(OFOB<8, 3>{});
}

TEST(PipelineSchedule, StageViewAgreesWithTheTable) {
  using P = OFOB<3, 7>;
  for (int i = 0; i < P::stages; ++i) {
    const auto stage = P::stage(i);
    EXPECT_EQ(stage.index(), i);
    for (int c = 0; c < P::cycles; ++c) {
      const auto step = P::step(i, c);
      EXPECT_EQ(stage.step(c), step);
      EXPECT_EQ(stage.is_forward(c), step.action == PipelineAction::forward);
      EXPECT_EQ(stage.is_backward(c), step.action == PipelineAction::backward);
      EXPECT_EQ(stage.is_idle(c), step.action == PipelineAction::idle);
      EXPECT_EQ(stage.micro_batch(c), step.micro_batch);
      // Exactly one of the three.
      EXPECT_EQ(int{stage.is_forward(c)} + int{stage.is_backward(c)} + int{stage.is_idle(c)}, 1);
    }
  }
}

TEST(PipelineSchedule, OutOfRangeThrows) {
  using P = GP<4, 3>;
  EXPECT_THROW((void)P::step(4, 0), std::out_of_range);
  EXPECT_THROW((void)P::step(0, P::cycles), std::out_of_range);
  EXPECT_THROW((void)P::forward_cycle(0, 3), std::out_of_range);
  EXPECT_THROW((void)P::backward_cycle(-1, 0), std::out_of_range);
  EXPECT_THROW((void)P::peak_in_flight(4), std::out_of_range);
  EXPECT_THROW((void)P::stage(-1), std::out_of_range);
  EXPECT_THROW((void)P::stage(0).is_forward(-1), std::out_of_range);
}

TEST(PipelineSchedule, BubbleFraction) {
  EXPECT_DOUBLE_EQ((GP<4, 8>::bubble_fraction()), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ((OFOB<4, 3>::bubble_fraction()), 3.0 / 6.0);
  EXPECT_DOUBLE_EQ((GP<1, 5>::bubble_fraction()), 0.0);
  EXPECT_DOUBLE_EQ((OFOB<16, 64>::bubble_fraction()), 15.0 / 79.0);
}
