/// @file
/// shardwise/nn/pipeline.hpp: runs a model cut into stages over a pipeline of ranks.
///
/// ```cpp
///   sw::PipelineEngine<sw::Pipeline<4, 8, sw::schedule::OneFOneB>, MyStage> engine(groups.group_along({"pp"}), stage);
///   double loss = engine.run(rows, inputs, targets, [&](int) { return 1.0 / (rows * width); }, [](int) {});
/// ```
///
/// Each rank of the stage group (its group rank is its stage) runs one stage: a
/// PipelineModule with forward(r, in, out) and backward(r, grad_out, grad_in*) per
/// micro-batch r. The engine walks the constexpr table of Pipeline<S, R, Schedule>
/// (nn/pipeline_schedule.hpp) cycle by cycle: in each cycle a stage runs the forward or the
/// backward the table gives it, and at the end of the cycle activations go to the next
/// stage and gradients to the previous one as point-to-point messages. The last stage
/// computes an MSE loss, scale(r) * sum((y - t)^2) for micro-batch r, and seeds the
/// backward with its gradient 2 * scale(r) * (y - t).
///
/// Deadlock freedom under MPI, where a send may block until the receiver posts its receive
/// (rendezvous), whereas the virtual cluster always buffers: every rank knows the whole
/// table, so at the end of cycle c both ends of a link (i, i+1) know what crosses it. The
/// links are served in two phases, first those whose lower stage is even, then the odd
/// ones, so a rank talks to at most one neighbour at a time and both ends of a link post
/// matching operations: one sendrecv when messages go both ways (1F1B's steady state), a
/// send facing a recv otherwise. No rank can wait on a rank that waits on it.
///
/// Micro-batch r is rows [block_begin(rows, R, r), ...) of the batch: sizes differ by at
/// most one (empty micro-batches are allowed). Activations are row-major (rows = samples),
/// so a micro-batch is a contiguous block. Buffers are kept per micro-batch and reused
/// from step to step: no allocation in steady state.
#pragma once

#include <Eigen/Core>
#include <concepts>
#include <cstdint>
#include <exception>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/comm/consistency.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/detail/partition.hpp"
#include "shardwise/traffic.hpp"
#include "shardwise/nn/pipeline_schedule.hpp"

namespace shardwise {

/// What every stage of a PipelineEngine::run throws when a stage's module (or a callback)
/// threw: the same type and text on every stage. On the stage that failed, the module's own
/// exception is nested in it (std::rethrow_if_nested).
class PipelineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An activation (or its gradient) passed between pipeline stages: rows are samples, row-major.
template <typename Scalar>
using PipelineMatrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace detail {
// One concept per member of a stage, so that PipelineEngine can name the one that is missing.
template <typename T>
concept stage_has_scalar_type = requires { typename T::scalar_type; };
template <typename T>
concept stage_has_input_width = requires(const T& module) {
  { module.input_width() } -> std::convertible_to<std::int64_t>;
};
template <typename T>
concept stage_has_output_width = requires(const T& module) {
  { module.output_width() } -> std::convertible_to<std::int64_t>;
};
template <typename T>
concept stage_has_forward = requires(T& module, int micro_batch, const PipelineMatrix<typename T::scalar_type>& in,
                                     PipelineMatrix<typename T::scalar_type>& out) {
  module.forward(micro_batch, in, out);
};
template <typename T>
concept stage_has_backward =
    requires(T& module, int micro_batch, const PipelineMatrix<typename T::scalar_type>& grad_out,
             PipelineMatrix<typename T::scalar_type>* grad_in) { module.backward(micro_batch, grad_out, grad_in); };
}  // namespace detail

/// One stage of a pipelined model. forward(r, in, out) computes the stage's output for
/// micro-batch r (resizing `out`) and keeps what backward(r, ...) needs; backward(r,
/// grad_out, grad_in) adds the parameter gradients and, unless grad_in is null (the first
/// stage), writes the gradient of the input.
template <typename T>
concept PipelineModule = detail::stage_has_scalar_type<T> && detail::stage_has_input_width<T> &&
                         detail::stage_has_output_width<T> && detail::stage_has_forward<T> &&
                         detail::stage_has_backward<T>;

namespace detail {
template <typename T>
inline constexpr bool is_pipeline_v = false;
template <int S, int R, typename Schedule>
inline constexpr bool is_pipeline_v<Pipeline<S, R, Schedule>> = true;
}  // namespace detail

/// Runs Module as stage `stage_group.rank()` of the pipeline P = Pipeline<S, R, Schedule>.
// Module is any type, checked below: one message per missing member, naming it and its
// signature (a PipelineModule constraint would only say that the concept is not satisfied).
// The checks after scalar_type assume it, so that a module without it gets one error.
template <typename P, typename Module>
class PipelineEngine {
  static_assert(detail::is_pipeline_v<P>,
                "shardwise::PipelineEngine<P, Module>: P must be a shardwise::Pipeline<S, R, Schedule>");
  static_assert(detail::stage_has_scalar_type<Module>,
                "shardwise::PipelineEngine<P, Module>: the stage module has no member type scalar_type; add "
                "using scalar_type = double; (or float): its activations are PipelineMatrix<scalar_type>");
  static_assert(!detail::stage_has_scalar_type<Module> || detail::stage_has_input_width<Module>,
                "shardwise::PipelineEngine<P, Module>: the stage module has no member input_width callable as "
                "std::int64_t input_width() const; add it: the columns of the stage's input");
  static_assert(!detail::stage_has_scalar_type<Module> || detail::stage_has_output_width<Module>,
                "shardwise::PipelineEngine<P, Module>: the stage module has no member output_width callable as "
                "std::int64_t output_width() const; add it: the columns of the stage's output");
  static_assert(!detail::stage_has_scalar_type<Module> || detail::stage_has_forward<Module>,
                "shardwise::PipelineEngine<P, Module>: the stage module has no member forward callable as "
                "void forward(int micro_batch, const shardwise::PipelineMatrix<scalar_type>& in, "
                "shardwise::PipelineMatrix<scalar_type>& out); add it: it computes micro-batch r's output");
  static_assert(!detail::stage_has_scalar_type<Module> || detail::stage_has_backward<Module>,
                "shardwise::PipelineEngine<P, Module>: the stage module has no member backward callable as "
                "void backward(int micro_batch, const shardwise::PipelineMatrix<scalar_type>& grad_out, "
                "shardwise::PipelineMatrix<scalar_type>* grad_in); add it (grad_in is null on the first stage)");

 public:
  /// The Pipeline<S, R, Schedule> whose table the engine follows.
  using pipeline_type = P;
  /// The module's scalar (float or double).
  using scalar_type = typename Module::scalar_type;
  /// Activations and gradients between stages: rows are samples, row-major.
  using matrix = PipelineMatrix<scalar_type>;
  /// S and R of the pipeline (P::stages, P::micro_batches).
  ///@{
  static constexpr int stages = P::stages;
  static constexpr int micro_batches = P::micro_batches;
  ///@}

  /// `stage_group` holds the S stages in order, as group_along({"pp"}) returns them; both it and
  /// `module` must outlive the engine. Throws std::invalid_argument unless it has S ranks.
  PipelineEngine(AnyCommunicator& stage_group, Module& module) : comm_(&stage_group), module_(&module) {
    if (stage_group.size() != stages)
      throw std::invalid_argument("shardwise::PipelineEngine: the pipeline has " + std::to_string(stages) +
                                  " stages but the stage group has " + std::to_string(stage_group.size()) +
                                  " ranks; give every stage one rank (e.g. a mesh axis of extent " +
                                  std::to_string(stages) + ")");
    stage_ = stage_group.rank();
    const auto r = static_cast<std::size_t>(micro_batches);
    input_.resize(r);
    output_.resize(r);
    grad_output_.resize(r);
    grad_input_.resize(r);
  }

  /// This rank's stage (0 reads the inputs, S - 1 computes the loss).
  [[nodiscard]] int stage() const noexcept { return stage_; }
  /// Whether this rank runs the first stage (it reads the inputs) or the last (it computes the loss).
  ///@{
  [[nodiscard]] bool is_first() const noexcept { return stage_ == 0; }
  [[nodiscard]] bool is_last() const noexcept { return stage_ == stages - 1; }
  ///@}

  /// Rows of micro-batch r in a batch of `rows` rows.
  [[nodiscard]] static constexpr std::int64_t micro_batch_rows(std::int64_t rows, int r) {
    return detail::block_size(rows, micro_batches, r);
  }

  /// Runs the forward and backward of all R micro-batches of a batch of `rows` rows, as the
  /// table says; collective over the stage group (every stage passes the same `rows`).
  /// The first stage reads `inputs` (rows x input_width()), the last `targets` (rows x
  /// output_width()); other stages may pass empty matrices. `scale(r)` weighs micro-batch r's
  /// squared error; `after_backward(r)` runs right after this stage's backward of r (for an
  /// update per micro-batch). Returns sum over r of scale(r) * sum((y - t)^2) on the last
  /// stage, 0 on the others.
  template <typename Scale, typename AfterBackward>
  double run(std::int64_t rows, const Eigen::Ref<const matrix>& inputs, const Eigen::Ref<const matrix>& targets,
             Scale&& scale, AfterBackward&& after_backward) {
    // The stages agree on `rows` and on whether any stage's input is wrong before anything moves:
    // a mistake on one stage is the same error on all of them, never a stage waiting forever.
    const std::int64_t in_width = module_->input_width(), out_width = module_->output_width();
    LocalProblem problem;
    if (rows < 0)  // first, so that a negative count is not reported as a shape mismatch of -4 x 4
      problem.set("rows is " + std::to_string(rows) + "; a batch has 0 or more rows");
    if (is_first() && (inputs.rows() != rows || inputs.cols() != in_width))
      problem.set("the first stage needs inputs of " + std::to_string(rows) + " x " + std::to_string(in_width) +
                  ", got " + std::to_string(inputs.rows()) + " x " + std::to_string(inputs.cols()));
    if (is_last() && (targets.rows() != rows || targets.cols() != out_width))
      problem.set("the last stage needs targets of " + std::to_string(rows) + " x " + std::to_string(out_width) +
                  ", got " + std::to_string(targets.rows()) + " x " + std::to_string(targets.cols()));
    const std::int64_t agreed[] = {rows};
    agree_on_all_ranks(*comm_, agreed, problem, "shardwise::PipelineEngine::run", "the batch's rows",
                       "rows of the batch");
    for (int r = 0; r < micro_batches; ++r) {
      const auto i = static_cast<std::size_t>(r);
      const std::int64_t n = micro_batch_rows(rows, r);
      input_[i].resize(n, in_width);
      grad_output_[i].resize(n, out_width);
    }
    double loss = 0.0;
    // A module (or a callback) that throws on one stage must not leave its neighbours waiting
    // for its messages: the stage keeps the schedule, sending zeros of the agreed sizes and
    // computing nothing more, and after the last cycle the stages agree on the earliest failure
    // (see failure_agreement below).
    stage_failure failure;
    for (int cycle = 0; cycle < P::cycles; ++cycle) {
      const PipelineStep step = P::step(stage_, cycle);
      const int r = step.micro_batch;
      const auto i = static_cast<std::size_t>(r);
      if (step.action == PipelineAction::forward) {
        const std::int64_t begin = detail::block_begin(rows, micro_batches, r), n = micro_batch_rows(rows, r);
        if (!failure.happened()) try {
            if (is_first()) input_[i] = inputs.middleRows(begin, n);
            module_->forward(r, input_[i], output_[i]);
            check_output(output_[i], n, out_width);
            if (is_last()) {
              grad_output_[i] = output_[i] - targets.middleRows(begin, n);
              const double weight = static_cast<double>(scale(r));
              loss += weight * static_cast<double>(grad_output_[i].squaredNorm());
              grad_output_[i] *= static_cast<scalar_type>(2.0 * weight);
            }
          } catch (...) {
            failure.record(cycle, "forward", r);
          }
        if (failure.happened() && (output_[i].rows() != n || output_[i].cols() != out_width))
          output_[i].setZero(n, out_width);  // what the next stage expects to receive
      } else if (step.action == PipelineAction::backward) {
        const std::int64_t n = micro_batch_rows(rows, r);
        if (!failure.happened()) try {
            module_->backward(r, grad_output_[i], is_first() ? nullptr : &grad_input_[i]);
            if (!is_first()) check_gradient(grad_input_[i], n, in_width);
            after_backward(r);
          } catch (...) {
            failure.record(cycle, "backward", r);
          }
        if (failure.happened() && !is_first() && (grad_input_[i].rows() != n || grad_input_[i].cols() != in_width))
          grad_input_[i].setZero(n, in_width);
      }
      exchange(cycle);
    }
    failure_agreement(failure);
    return loss;
  }

  /// Bytes and messages `stage` sends in one run(): an activation per micro-batch to the
  /// next stage (all but the last) and a gradient per micro-batch to the previous one (all
  /// but the first). The counting communicator charges exactly this.
  [[nodiscard]] static constexpr Traffic send_traffic(int stage, std::int64_t rows, std::int64_t input_width,
                                                      std::int64_t output_width, std::int64_t scalar_bytes) {
    Traffic total;
    for (int r = 0; r < micro_batches; ++r) {
      if (stage + 1 < stages) total += detail::message_traffic(micro_batch_rows(rows, r) * output_width, scalar_bytes);
      if (stage > 0) total += detail::message_traffic(micro_batch_rows(rows, r) * input_width, scalar_bytes);
    }
    return total;
  }

 private:
  static constexpr int tag = 0x7e1;

  /// The first exception this stage's module or callbacks threw in a run(), if any.
  struct stage_failure {
    std::exception_ptr exception;
    std::string text;
    int cycle = -1;
    [[nodiscard]] bool happened() const noexcept { return cycle >= 0; }
    void record(int at_cycle, const char* pass, int micro_batch) {
      exception = std::current_exception();
      cycle = at_cycle;
      std::string what = "an exception not derived from std::exception";
      try {
        std::rethrow_exception(exception);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      text = detail::message({pass, " of micro-batch ", micro_batch, " threw: ", what});
    }
  };

  /// Collective over the stage group: when a stage's module failed, every stage throws the same
  /// PipelineError naming the earliest failure (the lowest cycle, then the lowest stage: later
  /// failures may be its consequences); the stage that failed nests its own exception in it
  /// (std::rethrow_if_nested gives it back). At CheckLevel::local only the failed stage throws.
  void failure_agreement(const stage_failure& failure) {
    const bool cross_rank = check_level().load(std::memory_order_relaxed) == CheckLevel::cross_rank;
    int first = failure.happened() ? stage_ : -1;
    if (cross_rank) {
      std::int64_t key = failure.happened() ? -(std::int64_t{failure.cycle} * stages + stage_)
                                            : std::numeric_limits<std::int64_t>::min();
      comm_->all_reduce(std::span<std::int64_t>(&key, 1), ReduceOp::max);
      if (key == std::numeric_limits<std::int64_t>::min()) return;
      first = static_cast<int>((-key) % stages);
    }
    if (first < 0) return;
    LocalProblem problem;
    if (failure.happened()) problem.set(failure.text);
    LocalProblem::Kind kind{};
    const std::string text = cross_rank ? detail::first_problem_text(*comm_, first, problem, -1, kind) : failure.text;
    const PipelineError error(detail::message({"shardwise::PipelineEngine::run: stage ", first, "'s ", text,
                                               "; every stage stopped computing after it and finished the schedule"}));
    if (stage_ != first) throw error;
    try {
      std::rethrow_exception(failure.exception);
    } catch (...) {
      std::throw_with_nested(error);
    }
  }

  static void check_output(const matrix& out, std::int64_t rows, std::int64_t width) {
    if (out.rows() != rows || out.cols() != width)
      throw std::logic_error("shardwise::PipelineEngine: the module's forward gave " + std::to_string(out.rows()) +
                             " x " + std::to_string(out.cols()) + " for a micro-batch of " + std::to_string(rows) +
                             " rows; it must give rows x output_width() = " + std::to_string(width));
  }

  static void check_gradient(const matrix& grad, std::int64_t rows, std::int64_t width) {
    if (grad.rows() != rows || grad.cols() != width)
      throw std::logic_error("shardwise::PipelineEngine: the module's backward gave an input gradient of " +
                             std::to_string(grad.rows()) + " x " + std::to_string(grad.cols()) + " for a micro-batch of " +
                             std::to_string(rows) + " rows; it must give rows x input_width() = " + std::to_string(width));
  }

  static std::span<const scalar_type> view(const matrix& m) {
    return {m.data(), static_cast<std::size_t>(m.size())};
  }
  static std::span<scalar_type> view(matrix& m) { return {m.data(), static_cast<std::size_t>(m.size())}; }

  /// One phase per parity of the link's lower stage; see the top of this file.
  void exchange(int cycle) {
    for (int phase = 0; phase < 2; ++phase) {
      if (stage_ % 2 == phase && stage_ + 1 < stages) link_to_next(cycle);
      else if (stage_ >= 1 && (stage_ - 1) % 2 == phase) link_to_previous(cycle);
    }
  }

  /// This stage is the lower end: its activation goes up, the next stage's gradient comes down.
  void link_to_next(int cycle) {
    const PipelineStep mine = P::step(stage_, cycle), theirs = P::step(stage_ + 1, cycle);
    const bool send = mine.action == PipelineAction::forward;
    const bool receive = theirs.action == PipelineAction::backward;
    const int next = stage_ + 1;
    if (send && receive)
      comm_->sendrecv(view(output_[index(mine)]), next, view(grad_output_[index(theirs)]), next, tag);
    else if (send)
      comm_->send(view(output_[index(mine)]), next, tag);
    else if (receive)
      comm_->recv(view(grad_output_[index(theirs)]), next, tag);
  }

  /// This stage is the upper end: its input gradient goes down, the previous stage's activation comes up.
  void link_to_previous(int cycle) {
    const PipelineStep mine = P::step(stage_, cycle), theirs = P::step(stage_ - 1, cycle);
    const bool send = mine.action == PipelineAction::backward;
    const bool receive = theirs.action == PipelineAction::forward;
    const int previous = stage_ - 1;
    if (send && receive)
      comm_->sendrecv(view(grad_input_[index(mine)]), previous, view(input_[index(theirs)]), previous, tag);
    else if (send)
      comm_->send(view(grad_input_[index(mine)]), previous, tag);
    else if (receive)
      comm_->recv(view(input_[index(theirs)]), previous, tag);
  }

  static std::size_t index(const PipelineStep& step) { return static_cast<std::size_t>(step.micro_batch); }

  AnyCommunicator* comm_;
  Module* module_;
  int stage_ = 0;
  std::vector<matrix> input_, output_, grad_output_, grad_input_;  // per micro-batch
};

}  // namespace shardwise
