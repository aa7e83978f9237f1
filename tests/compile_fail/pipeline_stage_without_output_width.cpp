// A stage module without output_width(): the engine sizes the gradients with it.
// expect: shardwise::PipelineEngine<P, Module>: the stage module has no member output_width callable as std::int64_t output_width() const
#include "shardwise/nn/pipeline.hpp"

namespace sw = shardwise;
using Matrix = sw::PipelineMatrix<double>;

struct Stage {
  using scalar_type = double;
  std::int64_t input_width() const { return 4; }
  void forward(int, const Matrix& in, Matrix& out) { out = in; }
  void backward(int, const Matrix& grad_out, Matrix* grad_in) { if (grad_in) *grad_in = grad_out; }
};

void f(sw::AnyCommunicator& stages, Stage& stage) {
  sw::PipelineEngine<sw::Pipeline<2, 4, sw::schedule::OneFOneB>, Stage> engine(stages, stage);
}
