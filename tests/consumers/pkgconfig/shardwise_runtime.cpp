// The one file of a program built with SHARDWISE_SEPARATE_COMPILATION that compiles
// shardwise's run-time part (README, "Separate compilation").
#include <shardwise/compiled_runtime.hpp>
