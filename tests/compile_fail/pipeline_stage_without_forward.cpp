// A stage module whose forward has another signature (it returns the output instead of filling one).
// expect: shardwise::PipelineEngine<P, Module>: the stage module has no member forward callable as void forward(int micro_batch, const shardwise::PipelineMatrix<scalar_type>& in, shardwise::PipelineMatrix<scalar_type>& out)
#include "shardwise/nn/pipeline.hpp"

namespace sw = shardwise;
using Matrix = sw::PipelineMatrix<double>;

struct Stage {
  using scalar_type = double;
  std::int64_t input_width() const { return 4; }
  std::int64_t output_width() const { return 4; }
  Matrix forward(int, const Matrix& in) { return in; }  // not the engine's signature
  void backward(int, const Matrix& grad_out, Matrix* grad_in) { if (grad_in) *grad_in = grad_out; }
};

void f(sw::AnyCommunicator& stages, Stage& stage) {
  sw::PipelineEngine<sw::Pipeline<2, 4, sw::schedule::OneFOneB>, Stage> engine(stages, stage);
}
