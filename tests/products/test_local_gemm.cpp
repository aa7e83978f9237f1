// The one local GEMM (kernels/gemm.hpp) on matrix-vector shapes whose vector ends at an
// unreadable page: a BLAS kernel that reads past the vector (OpenBLAS 0.3.21's cgemv and zgemv
// read one stride past x) must not crash the product, and the result must be exact.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "shardwise/kernels/gemm.hpp"

namespace sw = shardwise;

namespace {

/// `count` elements that end where an inaccessible page begins: any read past them faults.
template <typename T>
class GuardedBuffer {
 public:
  explicit GuardedBuffer(std::size_t count) {
    page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t bytes = count * sizeof(T);
    span_ = (bytes + page_ - 1) / page_ * page_ + page_;
    void* base = mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<char*>(base);
    if (mprotect(base_ + span_ - page_, page_, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
    data_ = reinterpret_cast<T*>(base_ + span_ - page_ - bytes);
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  ~GuardedBuffer() { munmap(base_, span_); }
  T* data() const { return data_; }

 private:
  std::size_t page_ = 0, span_ = 0;
  char* base_ = nullptr;
  T* data_ = nullptr;
};

template <typename T>
T value(std::int64_t i) {
  return T(static_cast<typename T::value_type>(i % 7 - 3), static_cast<typename T::value_type>(i % 5 - 2));
}

/// c (m x 1) = A (m x k) x (k x 1) with x's last element just before the guard page, x stored
/// with stride `stride`, in every storage order of A and c; then the transposed shape, c^T
/// (1 x n) = x^T (1 x k) B (k x n). Exact: small integers.
template <typename T>
void check_matrix_vector(std::int64_t m, std::int64_t k, std::int64_t stride, bool a_row_major) {
  SCOPED_TRACE("m " + std::to_string(m) + ", k " + std::to_string(k) + ", stride " + std::to_string(stride) +
               (a_row_major ? ", row-major" : ", column-major"));
  std::vector<T> a(static_cast<std::size_t>(m * k));
  for (std::int64_t i = 0; i < m * k; ++i) a[static_cast<std::size_t>(i)] = value<T>(i);
  GuardedBuffer<T> x((k - 1) * stride + 1);
  for (std::int64_t i = 0; i < k; ++i) x.data()[i * stride] = value<T>(3 * i + 1);
  const std::int64_t lda = a_row_major ? k : m;
  auto a_at = [&](std::int64_t i, std::int64_t j) { return a[static_cast<std::size_t>(a_row_major ? i * k + j : i + j * m)]; };

  // c = A x: x is a k x 1 column (column-major, or row-major with its stride as ld).
  std::vector<T> c(static_cast<std::size_t>(m), T(9));
  const sw::detail::matrix_view<const T> av{a.data(), m, k, lda, a_row_major};
  const sw::detail::matrix_view<const T> xv{x.data(), k, 1, stride != 1 ? stride : k, stride != 1};
  sw::detail::gemm(sw::detail::matrix_view<T>{c.data(), m, 1, m, false}, av, xv, false);
  for (std::int64_t i = 0; i < m; ++i) {
    T want(0);
    for (std::int64_t j = 0; j < k; ++j) want += a_at(i, j) * x.data()[j * stride];
    ASSERT_EQ(c[static_cast<std::size_t>(i)], want) << "row " << i;
  }

  // c^T = x^T A^T: x as a 1 x k row, A^T (k x m) the same memory read in the other order.
  std::vector<T> ct(static_cast<std::size_t>(m), T(9));
  const sw::detail::matrix_view<const T> xt{x.data(), 1, k, stride != 1 ? stride : k, stride == 1};
  sw::detail::gemm(sw::detail::matrix_view<T>{ct.data(), 1, m, m, true}, xt, av.transposed(), false);
  for (std::int64_t i = 0; i < m; ++i) ASSERT_EQ(ct[static_cast<std::size_t>(i)], c[static_cast<std::size_t>(i)]);
}

template <typename T>
void check_all_shapes() {
  for (bool row_major : {false, true})
    for (std::int64_t stride : {1, 2, 5})
      for (std::int64_t m = 2; m <= 14; ++m)
        for (std::int64_t k = 1; k <= 9; ++k) {
          check_matrix_vector<T>(m, k, stride, row_major);
          if (::testing::Test::HasFatalFailure()) return;
        }
}

}  // namespace

TEST(LocalGemm, ComplexFloatMatrixVectorNeverReadsPastTheVector) { check_all_shapes<std::complex<float>>(); }
TEST(LocalGemm, ComplexDoubleMatrixVectorNeverReadsPastTheVector) { check_all_shapes<std::complex<double>>(); }
