// A stage module with no backward (a forward-only module cannot be trained in a pipeline).
// expect: shardwise::PipelineEngine<P, Module>: the stage module has no member backward callable as void backward(int micro_batch, const shardwise::PipelineMatrix<scalar_type>& grad_out, shardwise::PipelineMatrix<scalar_type>* grad_in)
#include "shardwise/nn/pipeline.hpp"

namespace sw = shardwise;
using Matrix = sw::PipelineMatrix<double>;

struct Stage {
  using scalar_type = double;
  std::int64_t input_width() const { return 4; }
  std::int64_t output_width() const { return 4; }
  void forward(int, const Matrix& in, Matrix& out) { out = in; }
};

void f(sw::AnyCommunicator& stages, Stage& stage) {
  sw::PipelineEngine<sw::Pipeline<2, 4, sw::schedule::OneFOneB>, Stage> engine(stages, stage);
}
