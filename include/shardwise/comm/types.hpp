// shardwise/comm/types.hpp: scalar types, reduction operators and errors of the comm layer.
//
// Everything the backends share and nothing that needs MPI: the Communicator API is
// typed on the four CommScalar types; a backend sees them as a Datatype tag.
#pragma once

#include <complex>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "shardwise/detail/failure.hpp"

namespace shardwise {

/// Reduction applied element-wise by all_reduce and reduce_scatter.
enum class ReduceOp {
  sum,  ///< Element-wise sum.
  max,  ///< Element-wise maximum.
  min   ///< Element-wise minimum.
};

/// The element types a Communicator moves: float, double, std::complex<float>,
/// std::complex<double>, int and std::int64_t. Complex numbers are summed, never compared:
/// max and min of them are refused.
template <typename T>
concept CommScalar = std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, std::complex<float>> ||
                     std::same_as<T, std::complex<double>> || std::same_as<T, int> || std::same_as<T, std::int64_t>;

/// Base of every error raised by a communication backend.
class CommError : public std::runtime_error {
 public:
  /// With the message what() returns, as std::runtime_error.
  using std::runtime_error::runtime_error;
};

/// An MPI call returned an error: what() names the call and carries MPI's own message.
class MpiError : public CommError {
 public:
  /// The error `error_code` of the MPI function `call`, with MPI's message for it.
  MpiError(std::string call, int error_code, std::string mpi_message)
      : CommError(detail::message({call, " failed: ", mpi_message, " (MPI error code ", error_code, ")"})),
        call_(std::move(call)),
        mpi_message_(std::move(mpi_message)),
        error_code_(error_code) {}

  /// The MPI function that failed, e.g. "MPI_Allreduce".
  [[nodiscard]] const std::string& call() const noexcept { return call_; }
  /// MPI's error string (MPI_Error_string).
  [[nodiscard]] const std::string& mpi_message() const noexcept { return mpi_message_; }
  /// The error code the call returned.
  [[nodiscard]] int error_code() const noexcept { return error_code_; }

 private:
  std::string call_;
  std::string mpi_message_;
  int error_code_;
};

/// Virtual cluster: another rank failed first; what() is "rank R failed first: <its what()>".
class RemoteRankFailure : public CommError {
 public:
  /// World rank `failed_rank` failed first with message `failure`; `first` is its exception,
  /// when this rank has it.
  RemoteRankFailure(int failed_rank, const std::string& failure, std::exception_ptr first = {})
      : CommError("rank " + std::to_string(failed_rank) + " failed first: " + failure),
        failed_rank_(failed_rank),
        first_(std::move(first)) {}

  /// World rank of the first rank that failed.
  [[nodiscard]] int failed_rank() const noexcept { return failed_rank_; }
  /// The exception that rank threw (empty on the ranks that were woken by it).
  [[nodiscard]] const std::exception_ptr& first_exception() const noexcept { return first_; }

 private:
  int failed_rank_;
  std::exception_ptr first_;
};

/// Virtual cluster: every rank still running waits for something no one can provide.
/// what() lists what each rank waits for.
class DeadlockError : public CommError {
 public:
  /// With the message what() returns.
  using CommError::CommError;
};

namespace detail {

/// The element type of a message, as the untyped backend interface sees it.
enum class Datatype : std::uint8_t { f32, f64, c64, c128, i32, i64 };

template <CommScalar T>
inline constexpr Datatype datatype_of = std::same_as<T, float>                  ? Datatype::f32
                                        : std::same_as<T, double>               ? Datatype::f64
                                        : std::same_as<T, std::complex<float>>  ? Datatype::c64
                                        : std::same_as<T, std::complex<double>> ? Datatype::c128
                                        : std::same_as<T, int>                  ? Datatype::i32
                                                                                : Datatype::i64;

/// Whether T is std::complex<float> or std::complex<double>.
template <typename T>
inline constexpr bool is_complex_v = std::same_as<T, std::complex<float>> || std::same_as<T, std::complex<double>>;
/// The scalars of distributed arrays: float, double and their std::complex.
template <typename T>
inline constexpr bool is_array_scalar_v = std::same_as<T, float> || std::same_as<T, double> || is_complex_v<T>;

[[nodiscard]] constexpr std::size_t size_of(Datatype type) noexcept {
  switch (type) {
    case Datatype::f32: return sizeof(float);
    case Datatype::f64: return sizeof(double);
    case Datatype::c64: return sizeof(std::complex<float>);
    case Datatype::c128: return sizeof(std::complex<double>);
    case Datatype::i32: return sizeof(int);
    case Datatype::i64: return sizeof(std::int64_t);
  }
  return 0;
}

[[nodiscard]] constexpr const char* name_of(Datatype type) noexcept {
  switch (type) {
    case Datatype::f32: return "float";
    case Datatype::f64: return "double";
    case Datatype::c64: return "complex<float>";
    case Datatype::c128: return "complex<double>";
    case Datatype::i32: return "int";
    case Datatype::i64: return "int64";
  }
  return "?";
}

[[nodiscard]] constexpr const char* name_of(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

}  // namespace detail
}  // namespace shardwise
