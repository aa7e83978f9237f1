// The test programs built with SHARDWISE_SEPARATE_COMPILATION link this file: it compiles
// shardwise's run-time part once (see shardwise/compiled_runtime.hpp).
#include "shardwise/compiled_runtime.hpp"
