// The matmul problem shapes a benchmark program runs, shared by the programs and the runner
// (benchmarks/run --sizes / --shapes / --quick set the variable):
//
//   SHARDWISE_BENCH_SHAPES="1024 2048 4096 16384x1024x1024"
//
// Tokens separated by spaces or commas: N is the square N x N x N, MxNxK is C (M x N) = A (M x K)
// B (K x N). Unset or empty: default_shapes. Every rank reads the same environment (mpiexec
// forwards it), so every rank registers the same benchmarks.
#pragma once

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardwise::bench {

using Shape = std::array<long, 3>;  // m, n, k

/// Square 512 ... 4096, a tall-skinny A (16384 x 1024) and a long inner dimension (k 16384).
inline std::vector<Shape> default_shapes() {
  return {{512, 512, 512},       {1024, 1024, 1024}, {2048, 2048, 2048},
          {4096, 4096, 4096},    {16384, 1024, 1024}, {1024, 1024, 16384}};
}

/// Parses "N" / "MxNxK" tokens separated by spaces or commas.
inline std::vector<Shape> parse_shapes(const std::string& text) {
  std::vector<Shape> shapes;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find_first_of(" ,", pos), text.size());
    const std::string token = text.substr(pos, end - pos);
    pos = end + 1;
    if (token.empty()) continue;
    std::vector<long> values;
    std::size_t at = 0;
    while (at <= token.size()) {
      const std::size_t x = std::min(token.find('x', at), token.size());
      const std::string number = token.substr(at, x - at);
      char* rest = nullptr;
      const long v = number.empty() ? 0 : std::strtol(number.c_str(), &rest, 10);
      if (number.empty() || *rest != '\0' || v <= 0)
        throw std::invalid_argument("SHARDWISE_BENCH_SHAPES: bad token '" + token + "' (use N or MxNxK)");
      values.push_back(v);
      at = x + 1;
    }
    if (values.size() == 1) shapes.push_back({values[0], values[0], values[0]});
    else if (values.size() == 3) shapes.push_back({values[0], values[1], values[2]});
    else throw std::invalid_argument("SHARDWISE_BENCH_SHAPES: bad token '" + token + "' (use N or MxNxK)");
  }
  return shapes;
}

/// SHARDWISE_BENCH_SHAPES, or default_shapes() when it is unset or empty.
inline std::vector<Shape> shapes_from_environment() {
  const char* text = std::getenv("SHARDWISE_BENCH_SHAPES");
  if (text == nullptr || *text == '\0') return default_shapes();
  return parse_shapes(text);
}

}  // namespace shardwise::bench
