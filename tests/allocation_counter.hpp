// Counts the bytes this thread allocates from the heap while a CountAllocations object lives:
// malloc, calloc, realloc, memalign and aligned_alloc are interposed (forwarding to glibc's
// own), so Eigen's allocations (malloc, aligned by hand), operator new and std::vector are
// seen. Not posix_memalign (compilers' <mm_malloc.h> declares it without noexcept, so it cannot
// be redefined portably): the tests check the library's workspace through its own byte count. Include it
// in exactly one translation unit of a test program.
//
// Under AddressSanitizer, which owns malloc, nothing is interposed and `counting` is false: the
// tests then skip their allocation checks (the optimized configurations make them).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define SHARDWISE_TEST_COUNTS_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHARDWISE_TEST_COUNTS_ALLOCATIONS 0
#endif
#endif
#ifndef SHARDWISE_TEST_COUNTS_ALLOCATIONS
#define SHARDWISE_TEST_COUNTS_ALLOCATIONS 1
#endif

namespace shardwise::testing {

/// Whether allocations are counted in this build.
inline constexpr bool counting_allocations = SHARDWISE_TEST_COUNTS_ALLOCATIONS != 0;

namespace allocation_detail {
// Constant-initialized thread locals: reading them allocates nothing (malloc calls them).
inline thread_local bool on = false;
inline thread_local std::int64_t bytes = 0;
inline thread_local std::int64_t calls = 0;
inline void note(std::size_t n) {
  if (on) {
    bytes += static_cast<std::int64_t>(n);
    ++calls;
  }
}
}  // namespace allocation_detail

/// Counts this thread's heap allocations from construction to bytes() / calls().
class CountAllocations {
 public:
  CountAllocations() {
    allocation_detail::bytes = 0;
    allocation_detail::calls = 0;
    allocation_detail::on = true;
  }
  ~CountAllocations() { allocation_detail::on = false; }
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;
  [[nodiscard]] std::int64_t bytes() const { return allocation_detail::bytes; }
  [[nodiscard]] std::int64_t calls() const { return allocation_detail::calls; }
};

}  // namespace shardwise::testing

#if SHARDWISE_TEST_COUNTS_ALLOCATIONS
// glibc's allocator itself, under the names it exports for interposers.
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);

void* malloc(std::size_t n) noexcept {
  shardwise::testing::allocation_detail::note(n);
  return __libc_malloc(n);
}
void* calloc(std::size_t count, std::size_t n) noexcept {
  shardwise::testing::allocation_detail::note(count * n);
  return __libc_calloc(count, n);
}
void* realloc(void* p, std::size_t n) noexcept {
  shardwise::testing::allocation_detail::note(n);
  return __libc_realloc(p, n);
}
void* memalign(std::size_t alignment, std::size_t n) noexcept {
  shardwise::testing::allocation_detail::note(n);
  return __libc_memalign(alignment, n);
}
void* aligned_alloc(std::size_t alignment, std::size_t n) noexcept {
  shardwise::testing::allocation_detail::note(n);
  return __libc_memalign(alignment, n);
}
}
#endif
