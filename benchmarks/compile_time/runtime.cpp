// The one source file of a program built with SHARDWISE_SEPARATE_COMPILATION that compiles
// shardwise's run-time part (see shardwise/compiled_runtime.hpp). compile_time.sh times it
// too: a program pays it once, however many translation units use shardwise.
#include "shardwise/compiled_runtime.hpp"
