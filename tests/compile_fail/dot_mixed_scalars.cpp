// dot of a double and a float vector: one error, with the library's text.
// expect: shardwise::dot: x and y have different scalar types
// single-error
#include "shardwise/linalg.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"p", 2>>;
using V = sw::TensorSharding<sw::Split<"p">>;
double f(const sw::ShardedTensor<double, Line, V>& x, const sw::ShardedTensor<float, Line, V>& y) {
  return sw::dot(x, y);
}
