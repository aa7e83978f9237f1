// Another shardwise header first would have left its run-time definitions out of this file.
// expect: shardwise/compiled_runtime.hpp must come before any other shardwise header: include it first, in a source file of its own
#define SHARDWISE_SEPARATE_COMPILATION 1
#include "shardwise/sharded_matrix.hpp"
#include "shardwise/compiled_runtime.hpp"
