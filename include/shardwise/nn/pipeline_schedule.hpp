/// @file
/// shardwise/nn/pipeline_schedule.hpp: GPipe and 1F1B pipeline schedules as constexpr tables.
///
/// A model cut into S stages trains on R micro-batches. Time is counted in cycles;
/// a forward and a backward of one micro-batch on one stage each take one cycle,
/// and sends/receives happen between cycles. So stage i may run the forward of
/// micro-batch r only in a cycle after stage i-1 ran it, and the backward only in
/// a cycle after stage i+1 ran its backward of r (the last stage: after its own
/// forward of r).
///
/// Pipeline<S, R, Schedule> holds, for every stage and cycle, whether the stage
/// runs a forward, a backward or nothing, and on which micro-batch (a pipeline
/// stage's status). The tables come from closed-form cycle formulas and are
/// checked by static_assert for every instantiation: each micro-batch is forwarded
/// and backwarded exactly once per stage, the dependencies above hold, and no stage
/// does two things in one cycle. Pure compile-time: no MPI, no Eigen.
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <type_traits>

namespace shardwise {

/// What a pipeline stage does in one cycle.
enum class PipelineAction {
  idle,      ///< nothing: a pipeline bubble
  forward,   ///< the forward pass of one micro-batch
  backward,  ///< the backward pass of one micro-batch
};

/// One cell of a schedule table: an action and its micro-batch (-1 when idle).
struct PipelineStep {
  /// What the stage does.
  PipelineAction action = PipelineAction::idle;
  /// Which micro-batch it works on, 0 to R - 1; -1 when idle.
  int micro_batch = -1;

  /// Same action on the same micro-batch.
  friend constexpr bool operator==(const PipelineStep&, const PipelineStep&) = default;
};

/// Schedule policies for Pipeline<S, R, Schedule>. Each gives the cycle of every
/// forward and backward as a closed formula in (S, R, stage, micro-batch).
namespace schedule {

/// GPipe: every stage runs all R forwards, then all R backwards.
///
/// Stage i runs the forward of micro-batch r at cycle i + r and its backward at
/// cycle R + 2S - 2 - i + r. The backward wave starts on the last
/// stage the cycle after its last forward (R + S - 2) and climbs one stage per
/// cycle. (The often-quoted 2(R - 1) - i + r equals this only when R = 2S.)
/// Makespan 2(R + S - 1); every stage keeps all R activations at its peak.
struct GPipe {
  /// The schedule's name, for messages and benchmark labels.
  static constexpr std::string_view name = "GPipe";

  /// Cycle of the forward / backward of `micro_batch` on `stage` (no range checks;
  /// Pipeline<S, R, GPipe> checks and tabulates them).
  ///@{
  [[nodiscard]] static constexpr int forward_cycle(int /*S*/, int /*R*/, int stage,
                                                   int micro_batch) noexcept {
    return stage + micro_batch;
  }
  [[nodiscard]] static constexpr int backward_cycle(int S, int R, int stage,
                                                    int micro_batch) noexcept {
    return R + 2 * S - 2 - stage + micro_batch;
  }
  ///@}
};

/// 1F1B, non-interleaved (PipeDream-flush, Megatron-LM): stage i runs
/// w = min(S - i, R) warm-up forwards, then alternates one backward and one
/// forward, then runs the remaining backwards (cool-down).
///
/// With unit-time forwards and backwards, every op at its earliest cycle:
/// ```{.unparsed}
///   forward  of r at stage i:  i + r        for r < S - i  (warm-up, as GPipe)
///                              i + 2r       for r >= S - i (steady: right after
///                                           the backward of r - (S - i))
///   backward of r at stage i:  2S - 1 - i + 2r
/// ```
/// The last stage runs F0 at S - 1 and B0 at S; each backward wave then climbs one
/// stage per cycle, and a stage alternating B and F can take a new one every other
/// cycle. Backwards and steady forwards on a stage have opposite parity, so they
/// never collide. Makespan 2(R + S - 1), the same as GPipe, but stage i holds at
/// most min(S - i, R) activations instead of R.
struct OneFOneB {
  /// The schedule's name, for messages and benchmark labels.
  static constexpr std::string_view name = "1F1B";

  /// Cycle of the forward / backward of `micro_batch` on `stage` (no range checks;
  /// Pipeline<S, R, OneFOneB> checks and tabulates them).
  ///@{
  [[nodiscard]] static constexpr int forward_cycle(int S, int /*R*/, int stage,
                                                   int micro_batch) noexcept {
    return micro_batch < S - stage ? stage + micro_batch : stage + 2 * micro_batch;
  }
  [[nodiscard]] static constexpr int backward_cycle(int S, int /*R*/, int stage,
                                                    int micro_batch) noexcept {
    return 2 * S - 1 - stage + 2 * micro_batch;
  }
  ///@}
};

}  // namespace schedule

namespace detail {

template <typename T>
inline constexpr bool is_pipeline_schedule_v = false;
template <>
inline constexpr bool is_pipeline_schedule_v<schedule::GPipe> = true;
template <>
inline constexpr bool is_pipeline_schedule_v<schedule::OneFOneB> = true;

/// Forward and backward cycle of every (stage, micro-batch), row-major by stage.
template <int S, int R>
struct cycle_table {
  std::array<int, static_cast<std::size_t>(S) * R> forward{};
  std::array<int, static_cast<std::size_t>(S) * R> backward{};

  [[nodiscard]] static constexpr std::size_t at(int stage, int micro_batch) noexcept {
    return static_cast<std::size_t>(stage) * R + static_cast<std::size_t>(micro_batch);
  }
  /// One past the last cycle that runs anything.
  [[nodiscard]] constexpr int makespan() const noexcept {
    int last = -1;
    for (std::size_t k = 0; k < forward.size(); ++k) {
      if (forward[k] > last) last = forward[k];
      if (backward[k] > last) last = backward[k];
    }
    return last + 1;
  }
};

template <int S, int R, typename Schedule>
[[nodiscard]] constexpr cycle_table<S, R> schedule_cycles() noexcept {
  cycle_table<S, R> table;
  for (int i = 0; i < S; ++i)
    for (int r = 0; r < R; ++r) {
      table.forward[table.at(i, r)] = Schedule::forward_cycle(S, R, i, r);
      table.backward[table.at(i, r)] = Schedule::backward_cycle(S, R, i, r);
    }
  return table;
}

/// The step table of a cycle table, stage-major, with what went wrong writing it.
template <int S, int Cycles>
struct step_table {
  std::array<PipelineStep, static_cast<std::size_t>(S) * Cycles> steps{};
  bool in_range = true;          // every op lands in [0, Cycles)
  bool one_op_per_cycle = true;  // no cell was written twice

  [[nodiscard]] constexpr const PipelineStep& at(int stage, int cycle) const noexcept {
    return steps[static_cast<std::size_t>(stage) * Cycles + static_cast<std::size_t>(cycle)];
  }
};

template <int S, int R, int Cycles>
[[nodiscard]] constexpr step_table<S, Cycles> build_steps(const cycle_table<S, R>& cycles) noexcept {
  step_table<S, Cycles> table;
  auto place = [&table](int stage, int cycle, PipelineAction action, int micro_batch) {
    if (cycle < 0 || cycle >= Cycles) {
      table.in_range = false;
      return;
    }
    auto& cell = table.steps[static_cast<std::size_t>(stage) * Cycles + static_cast<std::size_t>(cycle)];
    if (cell.action != PipelineAction::idle) table.one_op_per_cycle = false;
    cell = PipelineStep{action, micro_batch};
  };
  for (int i = 0; i < S; ++i)
    for (int r = 0; r < R; ++r) {
      place(i, cycles.forward[cycles.at(i, r)], PipelineAction::forward, r);
      place(i, cycles.backward[cycles.at(i, r)], PipelineAction::backward, r);
    }
  return table;
}

/// Which schedule invariants hold. Each field is checked on its own so that a
/// failing static_assert can say which one broke.
struct schedule_check {
  bool in_range = true;
  bool one_op_per_cycle = true;
  bool each_once = true;                   // per stage: one forward, one backward per micro-batch
  bool forward_after_predecessor = true;   // F(i, r) > F(i-1, r)
  bool backward_after_successor = true;    // B(i, r) > B(i+1, r); last stage: B > F
  bool backward_after_own_forward = true;  // B(i, r) > F(i, r): the activation exists

  [[nodiscard]] constexpr bool ok() const noexcept {
    return in_range && one_op_per_cycle && each_once && forward_after_predecessor &&
           backward_after_successor && backward_after_own_forward;
  }
};

/// Checks a schedule given by its cycles against its step table. The "once" check
/// reads the step table, so an op overwritten by another in the same cell shows.
template <int S, int R, int Cycles>
[[nodiscard]] constexpr schedule_check check_schedule(const cycle_table<S, R>& cycles,
                                                      const step_table<S, Cycles>& steps) noexcept {
  schedule_check check;
  check.in_range = steps.in_range;
  check.one_op_per_cycle = steps.one_op_per_cycle;

  for (int i = 0; i < S; ++i) {
    std::array<int, static_cast<std::size_t>(R)> forwards{}, backwards{};
    for (int c = 0; c < Cycles; ++c) {
      const PipelineStep& step = steps.at(i, c);
      if (step.action == PipelineAction::idle) continue;
      if (step.micro_batch < 0 || step.micro_batch >= R) {
        check.each_once = false;
        continue;
      }
      auto& count = step.action == PipelineAction::forward ? forwards : backwards;
      ++count[static_cast<std::size_t>(step.micro_batch)];
    }
    for (int r = 0; r < R; ++r)
      if (forwards[static_cast<std::size_t>(r)] != 1 || backwards[static_cast<std::size_t>(r)] != 1)
        check.each_once = false;
  }

  for (int i = 0; i < S; ++i)
    for (int r = 0; r < R; ++r) {
      const int f = cycles.forward[cycles.at(i, r)];
      const int b = cycles.backward[cycles.at(i, r)];
      if (i > 0 && f <= cycles.forward[cycles.at(i - 1, r)]) check.forward_after_predecessor = false;
      if (i + 1 < S && b <= cycles.backward[cycles.at(i + 1, r)])
        check.backward_after_successor = false;
      if (i + 1 == S && b <= f) check.backward_after_successor = false;
      if (b <= f) check.backward_after_own_forward = false;
    }
  return check;
}

/// Most micro-batches a stage holds activations for at once: forward run, backward
/// not yet finished (a backward still reads its activation during its own cycle).
template <int S, int Cycles>
[[nodiscard]] constexpr std::array<int, static_cast<std::size_t>(S)> peak_in_flight(
    const step_table<S, Cycles>& steps) noexcept {
  std::array<int, static_cast<std::size_t>(S)> peak{};
  for (int i = 0; i < S; ++i) {
    int held = 0;
    for (int c = 0; c < Cycles; ++c) {
      const PipelineAction action = steps.at(i, c).action;
      if (action == PipelineAction::forward && ++held > peak[static_cast<std::size_t>(i)])
        peak[static_cast<std::size_t>(i)] = held;
      if (action == PipelineAction::backward) --held;
    }
  }
  return peak;
}

}  // namespace detail

/// Satisfied by the schedule policies Pipeline accepts.
template <typename T>
concept PipelineSchedule = detail::is_pipeline_schedule_v<T>;

template <typename P>
class PipelineStage;

/// A pipeline of S stages over R micro-batches under Schedule (schedule::GPipe or
/// schedule::OneFOneB), as constexpr tables: Pipeline<4, 8, schedule::OneFOneB>.
template <int S, int R, typename Schedule>
class Pipeline {
  static_assert(S >= 1, "shardwise::Pipeline<S, R, Schedule>: the number of stages S must be at least 1");
  static_assert(R >= 1,
                "shardwise::Pipeline<S, R, Schedule>: the number of micro-batches R must be at least 1");
  static_assert(detail::is_pipeline_schedule_v<Schedule>,
                "shardwise::Pipeline<S, R, Schedule>: unknown Schedule; the supported schedules are "
                "shardwise::schedule::GPipe and shardwise::schedule::OneFOneB");

  // After a failed check above, go on with a harmless 1-stage GPipe so that the
  // message above is the only error.
  static constexpr bool valid = S >= 1 && R >= 1 && detail::is_pipeline_schedule_v<Schedule>;
  static constexpr int S_ = valid ? S : 1;
  static constexpr int R_ = valid ? R : 1;
  using schedule_ = std::conditional_t<valid, Schedule, schedule::GPipe>;

  static constexpr detail::cycle_table<S_, R_> cycles_ = detail::schedule_cycles<S_, R_, schedule_>();

 public:
  /// The Schedule parameter: schedule::GPipe or schedule::OneFOneB.
  using schedule_type = Schedule;
  /// Short names for the cell types of the table, PipelineAction and PipelineStep.
  ///@{
  using Action = PipelineAction;
  using Step = PipelineStep;
  ///@}
  /// The per-stage view returned by stage(i).
  using Stage = PipelineStage<Pipeline>;

  /// S: the model is cut into this many stages, one per pipeline rank.
  static constexpr int stages = S;
  /// R: the batch is split into this many micro-batches.
  static constexpr int micro_batches = R;
  /// Total cycles: one past the last cycle in which any stage works (the makespan).
  static constexpr int cycles = cycles_.makespan();

 private:
  static constexpr detail::step_table<S_, cycles> steps_ = detail::build_steps<S_, R_, cycles>(cycles_);
  static constexpr detail::schedule_check check_ = detail::check_schedule(cycles_, steps_);
  static constexpr std::array<int, static_cast<std::size_t>(S_)> peak_ = detail::peak_in_flight(steps_);

  // The invariants, for every instantiation. The built-in formulas satisfy them
  // (see schedule::GPipe and schedule::OneFOneB); these catch a wrong formula.
  static_assert(check_.in_range,
                "shardwise::Pipeline: schedule error: an operation falls before cycle 0");
  static_assert(check_.one_op_per_cycle,
                "shardwise::Pipeline: schedule error: a stage is given two operations in one cycle");
  static_assert(check_.each_once,
                "shardwise::Pipeline: schedule error: some stage does not run exactly one forward and "
                "one backward of every micro-batch");
  static_assert(check_.forward_after_predecessor,
                "shardwise::Pipeline: schedule error: a stage runs the forward of a micro-batch before "
                "the previous stage has sent it the activation (it must come in a later cycle)");
  static_assert(check_.backward_after_successor,
                "shardwise::Pipeline: schedule error: a stage runs the backward of a micro-batch before "
                "the next stage has sent it the gradient (on the last stage: before its own forward)");
  static_assert(check_.backward_after_own_forward,
                "shardwise::Pipeline: schedule error: a stage runs the backward of a micro-batch before "
                "its own forward of it");

  static constexpr void check_stage(int stage, const char* what) {
    if (stage < 0 || stage >= S) throw std::out_of_range(what);
  }
  static constexpr void check_micro_batch(int micro_batch, const char* what) {
    if (micro_batch < 0 || micro_batch >= R) throw std::out_of_range(what);
  }

 public:
  /// What `stage` does in `cycle`. Throws std::out_of_range outside the table
  /// (a compile error in a constant expression).
  [[nodiscard]] static constexpr Step step(int stage, int cycle) {
    check_stage(stage, "shardwise::Pipeline::step: stage out of range");
    if (cycle < 0 || cycle >= cycles)
      throw std::out_of_range("shardwise::Pipeline::step: cycle out of range");
    return steps_.at(stage, cycle);
  }

  /// Cycle in which `stage` runs the forward of `micro_batch`.
  [[nodiscard]] static constexpr int forward_cycle(int stage, int micro_batch) {
    check_stage(stage, "shardwise::Pipeline::forward_cycle: stage out of range");
    check_micro_batch(micro_batch, "shardwise::Pipeline::forward_cycle: micro-batch out of range");
    return cycles_.forward[cycles_.at(stage, micro_batch)];
  }

  /// Cycle in which `stage` runs the backward of `micro_batch`.
  [[nodiscard]] static constexpr int backward_cycle(int stage, int micro_batch) {
    check_stage(stage, "shardwise::Pipeline::backward_cycle: stage out of range");
    check_micro_batch(micro_batch, "shardwise::Pipeline::backward_cycle: micro-batch out of range");
    return cycles_.backward[cycles_.at(stage, micro_batch)];
  }

  /// Micro-batches whose activations `stage` holds at the end of `cycle`: forward
  /// run in or before it, backward after it.
  [[nodiscard]] static constexpr int in_flight(int stage, int cycle) {
    check_stage(stage, "shardwise::Pipeline::in_flight: stage out of range");
    int held = 0;
    for (int r = 0; r < R; ++r)
      if (forward_cycle(stage, r) <= cycle && cycle < backward_cycle(stage, r)) ++held;
    return held;
  }

  /// Most activations `stage` must keep at once: R for GPipe, min(S - stage, R)
  /// for 1F1B.
  [[nodiscard]] static constexpr int peak_in_flight(int stage) {
    check_stage(stage, "shardwise::Pipeline::peak_in_flight: stage out of range");
    return peak_[static_cast<std::size_t>(stage)];
  }

  /// Idle share of all stage-cycles: (S - 1) / (R + S - 1) for both schedules.
  [[nodiscard]] static constexpr double bubble_fraction() noexcept {
    int idle = 0;
    for (const Step& s : steps_.steps)
      if (s.action == Action::idle) ++idle;
    return static_cast<double>(idle) / static_cast<double>(steps_.steps.size());
  }

  /// The view of one stage: what it does in each cycle.
  [[nodiscard]] static constexpr Stage stage(int index) { return Stage(index); }
};

/// One stage of a Pipeline: what it does in each cycle, read off the schedule's tables.
template <typename P>
class PipelineStage {
 public:
  /// The Pipeline<S, R, Schedule> this is a stage of.
  using pipeline_type = P;

  /// Throws std::out_of_range unless 0 <= index < P::stages.
  constexpr explicit PipelineStage(int index) : index_(index) {
    if (index < 0 || index >= P::stages)
      throw std::out_of_range("shardwise::PipelineStage: stage index out of range");
  }

  /// The stage's position in the pipeline, 0 to S - 1.
  [[nodiscard]] constexpr int index() const noexcept { return index_; }
  /// The first stage reads the input; the last one computes the loss.
  ///@{
  [[nodiscard]] constexpr bool is_first() const noexcept { return index_ == 0; }
  [[nodiscard]] constexpr bool is_last() const noexcept { return index_ == P::stages - 1; }
  ///@}

  /// This stage's cell of the table in `cycle`: Pipeline::step(index(), cycle).
  [[nodiscard]] constexpr PipelineStep step(int cycle) const { return P::step(index_, cycle); }
  /// What this stage does in `cycle`, and tests for each action.
  ///@{
  [[nodiscard]] constexpr PipelineAction action(int cycle) const { return step(cycle).action; }
  [[nodiscard]] constexpr bool is_forward(int cycle) const {
    return action(cycle) == PipelineAction::forward;
  }
  [[nodiscard]] constexpr bool is_backward(int cycle) const {
    return action(cycle) == PipelineAction::backward;
  }
  [[nodiscard]] constexpr bool is_idle(int cycle) const { return action(cycle) == PipelineAction::idle; }
  ///@}
  /// The micro-batch worked on in `cycle`, or -1 when idle.
  [[nodiscard]] constexpr int micro_batch(int cycle) const { return step(cycle).micro_batch; }

  /// Cycle of this stage's forward / backward of `micro_batch` (Pipeline::forward_cycle,
  /// Pipeline::backward_cycle).
  ///@{
  [[nodiscard]] constexpr int forward_cycle(int micro_batch) const {
    return P::forward_cycle(index_, micro_batch);
  }
  [[nodiscard]] constexpr int backward_cycle(int micro_batch) const {
    return P::backward_cycle(index_, micro_batch);
  }
  ///@}
  /// Activations this stage holds at the end of `cycle` (Pipeline::in_flight).
  [[nodiscard]] constexpr int in_flight(int cycle) const { return P::in_flight(index_, cycle); }
  /// Most activations this stage holds at once (Pipeline::peak_in_flight).
  [[nodiscard]] constexpr int peak_in_flight() const { return P::peak_in_flight(index_); }

  /// The same stage of the same pipeline.
  friend constexpr bool operator==(const PipelineStage&, const PipelineStage&) = default;

 private:
  int index_;
};

}  // namespace shardwise
