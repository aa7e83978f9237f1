// generate calls the element function with one global index per dimension: two for a matrix.
// expect: shardwise::ShardedTensor::generate: the element function must take one std::int64_t global index per dimension
#include "shardwise/sharded_tensor.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Matrix = sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Split<"x">, sw::Replicated>>;
Matrix f(const sw::ProcessGroupMesh<Line>& groups) {
  return Matrix::generate(groups, {4, 4}, [](std::int64_t i) { return static_cast<double>(i); });
}
