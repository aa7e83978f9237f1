// shardwise/kernels/simulation.hpp: the kernels on a simulated cluster (SimGrid SMPI).
//
// Included only when SHARDWISE_SIMULATE=1, which needs SMPI's <smpi/smpi.h> (compile with
// smpicxx); the default build never sees this file. Two switches, set once per run before
// the first matmul and the same on every rank:
//   - compute: whether local GEMMs also multiply. A simulated GEMM always charges its
//     flops to the simulated host (smpi_execute_flops), so that the simulated time is the
//     same whether or not the product is computed; computing it lets a small run check the
//     results, skipping it lets P = 4096 finish in minutes.
//   - fold: whether the workspace's buffers come from SMPI's shared malloc, where all ranks'
//     buffers are the same physical pages (their contents are garbage, so only with compute
//     off) and SMPI skips copying messages between them. That is what fits thousands of
//     simulated ranks in one machine's memory.
// Plain atomics, not thread_local: under SMPI all ranks share one process, and these hold
// the same value on every rank by construction.
#pragma once

#include <smpi/smpi.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>

namespace shardwise::detail::simulation {

/// Whether a simulated GEMM computes its product as well as charging its flops.
inline std::atomic<bool>& compute() {
  static std::atomic<bool> value{true};
  return value;
}

/// Whether the workspace folds its buffers (SMPI's shared malloc).
inline std::atomic<bool>& fold() {
  static std::atomic<bool> value{false};
  return value;
}

/// Charges `flops` to this rank's simulated host: the simulated clock advances by flops / host speed.
inline void charge_flops(double flops) { smpi_execute_flops(flops); }

/// `bytes` of scratch, folded or 64-byte aligned; nullptr when out of memory.
inline void* allocate(std::size_t bytes) {
  // One call site for every folded buffer: SMPI's shared malloc maps all of them onto the
  // same pages, which is the point (their contents are never read).
  return fold().load(std::memory_order_relaxed) ? SMPI_SHARED_MALLOC(bytes) : std::aligned_alloc(64, bytes);
}

/// Frees what allocate() returned (`fold` must not have changed in between).
inline void deallocate(void* memory) {
  if (fold().load(std::memory_order_relaxed))
    SMPI_SHARED_FREE(memory);
  else
    std::free(memory);
}

}  // namespace shardwise::detail::simulation
