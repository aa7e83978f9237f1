// The compiled runtime is only for programs built with SHARDWISE_SEPARATE_COMPILATION.
// expect: shardwise/compiled_runtime.hpp is for programs built with SHARDWISE_SEPARATE_COMPILATION defined; define it for every translation unit
#include "shardwise/compiled_runtime.hpp"
