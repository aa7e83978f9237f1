// shardwise/comm/mpi.hpp: the MPI backend.
//
// MpiCommunicator wraps a communicator it owns: built from a user's MPI_Comm (MPI_COMM_WORLD
// or any other) it works on an MPI_Comm_dup of it, so library traffic never matches the
// user's own messages, with MPI_ERRORS_RETURN set so that every failing call becomes an
// MpiError naming the call and carrying MPI's error string. It frees what it created (the
// dup, subgroups) and nothing else, and makes no MPI call after MPI_Finalize.
//
// Counts are std::int64_t in the API and must fit in an int here. The count and
// displacement arrays of the v-collectives are members, sized once: no allocation per call.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <exception>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/comm/collective_api.hpp"
#include "shardwise/comm/communicator.hpp"
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/detail/separate_compilation.hpp"

#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
#include <algorithm>
#include <cstring>
#include <new>

#include "shardwise/detail/simulation.hpp"  // SMPI: the ReduceScatter's receive buffer folded
#endif

namespace shardwise {

namespace detail {

/// Throws the MpiError for a failed call, with MPI's error string.
[[noreturn, gnu::cold, gnu::noinline]] SHARDWISE_DECL void throw_mpi_error(int code, const char* call)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw MpiError(call, code, length > 0 ? std::string(text, static_cast<std::size_t>(length)) : "unknown MPI error");
}
#else
;
#endif

/// The one place MPI return codes are checked.
inline void mpi_check(int code, const char* call) {
  if (code != MPI_SUCCESS) [[unlikely]]
    throw_mpi_error(code, call);
}

[[nodiscard]] inline bool mpi_usable() noexcept {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

[[nodiscard]] inline MPI_Datatype mpi_datatype(Datatype type) noexcept {
  switch (type) {
    case Datatype::f32: return MPI_FLOAT;
    case Datatype::f64: return MPI_DOUBLE;
    case Datatype::c64: return MPI_C_FLOAT_COMPLEX;  // the layout of std::complex<float>
    case Datatype::c128: return MPI_C_DOUBLE_COMPLEX;
    case Datatype::i32: return MPI_INT;
    case Datatype::i64: return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

[[nodiscard]] inline MPI_Op mpi_op(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

/// An element count (or displacement) as MPI's int.
[[nodiscard]] inline int mpi_count(std::int64_t n, const char* what) {
  if (n > std::numeric_limits<int>::max()) [[unlikely]]
    fail({"shardwise MPI backend: ", what, " is ", static_cast<long long>(n), " elements, more than MPI's int counts allow (",
          std::numeric_limits<int>::max(), "); split the operation"});
  return static_cast<int>(n);
}

/// A receive must deliver exactly the expected number of elements.
inline void check_received(const MPI_Status& status, MPI_Datatype type, int expected, int source, int tag,
                           const char* function) {
  int received = 0;
  mpi_check(MPI_Get_count(&status, type, &received), "MPI_Get_count");
  if (received != expected) [[unlikely]]
    fail<CommError>({"shardwise::", function, ": expected ", expected, " elements from rank ", source, " (tag ", tag,
                     ") but the message holds ", received, "; a message must be received with exactly its size"});
}

/// Inline state of an MPI Request: the receive and the send.
struct MpiRequestState {
  MPI_Request requests[2];  // [0] receive, [1] send
  MPI_Datatype type;
  int expected;
  int source;
  int tag;
};

}  // namespace detail

/// A Communicator over MPI.
class MpiCommunicator : public CollectiveApi<MpiCommunicator> {
 public:
  /// Works on a duplicate of `comm` (collective over comm, like MPI_Comm_dup). MPI must be
  /// initialized; `comm` itself is never modified or freed.
  SHARDWISE_DECL explicit MpiCommunicator(MPI_Comm comm);

  /// Takes over `other`'s communicator; `other` is then empty (MPI_COMM_NULL). Assignment
  /// first frees the communicator this object owns.
  ///@{
  MpiCommunicator(MpiCommunicator&& other) noexcept
      : comm_(std::exchange(other.comm_, MPI_COMM_NULL)), rank_(other.rank_), size_(other.size_),
        counts_(std::move(other.counts_)), displacements_(std::move(other.displacements_)) {}
  MpiCommunicator& operator=(MpiCommunicator&& other) noexcept {
    if (this != &other) {
      release();
      comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
      rank_ = other.rank_;
      size_ = other.size_;
      counts_ = std::move(other.counts_);
      displacements_ = std::move(other.displacements_);
    }
    return *this;
  }
  ///@}
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;
  /// Frees the communicator this object owns (MPI_Comm_free), unless MPI is already finalized.
  ~MpiCommunicator() { release(); }

  /// This rank in the communicator (MPI_Comm_rank).
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// Number of ranks in the communicator (MPI_Comm_size).
  [[nodiscard]] int size() const noexcept { return size_; }
  /// The MPI communicator this object owns (for the user's own MPI calls; do not free it).
  [[nodiscard]] MPI_Comm native() const noexcept { return comm_; }

 private:
  friend struct detail::RawAccess;
  using Datatype = detail::Datatype;

  struct Owned {};
  MpiCommunicator(Owned, MPI_Comm owned) : comm_(owned) { adopt(); }

  SHARDWISE_DECL void adopt();

  void release() noexcept {
    if (comm_ != MPI_COMM_NULL && detail::mpi_usable()) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }

  static const void* send_buffer(const void* in, const void* in_place_position) noexcept {
    return in == in_place_position ? MPI_IN_PLACE : in;
  }

  /// counts_ and displacements_ from `counts`, all checked to fit in int.
  void load_counts(std::span<const std::int64_t> counts) {
    std::int64_t offset = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      counts_[r] = detail::mpi_count(counts[r], "a count");
      displacements_[r] = detail::mpi_count(offset, "a displacement");
      offset += counts[r];
    }
  }

  void do_all_reduce(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) {
    detail::mpi_check(MPI_Allreduce(send_buffer(in, out), out, detail::mpi_count(n, "all_reduce"),
                                    detail::mpi_datatype(t), detail::mpi_op(op), comm_),
                      "MPI_Allreduce");
  }
  void do_all_gather(const void* in, void* out, std::int64_t n, Datatype t) {
    const int count = detail::mpi_count(n, "all_gather's input");
    static_cast<void>(detail::mpi_count(n * size_, "all_gather's output"));  // must fit too
    const auto* own = static_cast<const std::byte*>(out) + n * rank_ * static_cast<std::int64_t>(detail::size_of(t));
    const MPI_Datatype type = detail::mpi_datatype(t);
    detail::mpi_check(MPI_Allgather(send_buffer(in, own), count, type, out, count, type, comm_), "MPI_Allgather");
  }
  void do_all_gather_v(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t) {
    load_counts(counts);
    const auto r = static_cast<std::size_t>(rank_);
    const auto* own =
        static_cast<const std::byte*>(out) + std::int64_t{displacements_[r]} * static_cast<std::int64_t>(detail::size_of(t));
    const MPI_Datatype type = detail::mpi_datatype(t);
    detail::mpi_check(MPI_Allgatherv(send_buffer(in, own), counts_[r], type, out, counts_.data(),
                                     displacements_.data(), type, comm_),
                      "MPI_Allgatherv");
  }
  void do_reduce_scatter(const void* in, void* out, std::span<const std::int64_t> counts, Datatype t,
                         ReduceOp op) {
    load_counts(counts);
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
    simulated_reduce_scatter(in, out, t, op);
#else
    detail::mpi_check(MPI_Reduce_scatter(in, out, counts_.data(), detail::mpi_datatype(t), detail::mpi_op(op), comm_),
                      "MPI_Reduce_scatter");
#endif
  }
  void do_reduce_scatter_block(const void* in, void* out, std::int64_t n, Datatype t, ReduceOp op) {
    static_cast<void>(detail::mpi_count(n * size_, "reduce_scatter_block's input"));  // must fit too
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
    load_counts(std::vector<std::int64_t>(static_cast<std::size_t>(size_), n));
    simulated_reduce_scatter(in, out, t, op);
#else
    detail::mpi_check(MPI_Reduce_scatter_block(in, out, detail::mpi_count(n, "reduce_scatter_block"),
                                               detail::mpi_datatype(t), detail::mpi_op(op), comm_),
                      "MPI_Reduce_scatter_block");
#endif
  }
#if defined(SHARDWISE_SIMULATE) && SHARDWISE_SIMULATE
  /// The ReduceScatter of counts_ / displacements_ on a simulated cluster: MPICH's pairwise
  /// exchange, the algorithm SMPI's `mpich_pair` runs (step i sends rank + i its block and adds
  /// the block from rank - i: the same messages, bytes and simulated time), but with its one
  /// receive buffer from detail::simulation::allocate, folded when the run folds. SMPI's own
  /// buffer is private to each simulated rank, and at P = 256 a 2.5D product's 256 blocks of
  /// 256 MiB (2^21 x 2^12 x 2^12) outgrew this machine. The sums are skipped when the run
  /// computes nothing, as the kernels' are.
  void simulated_reduce_scatter(const void* in, void* out, Datatype t, ReduceOp op) {
    const auto element = static_cast<std::int64_t>(detail::size_of(t));
    const MPI_Datatype type = detail::mpi_datatype(t);
    const auto r = static_cast<std::size_t>(rank_);
    const auto* input = static_cast<const std::byte*>(in);
    const std::int64_t own = counts_[r];
    if (own > 0 && !detail::simulation::skip_local_data())
      std::memcpy(out, input + std::int64_t{displacements_[r]} * element, static_cast<std::size_t>(own * element));
    void* received = detail::simulation::allocate(static_cast<std::size_t>(std::max<std::int64_t>(own, 1) * element));
    if (received == nullptr) throw std::bad_alloc();
    constexpr int tag = 0x5357;  // 'SW': apart from any other point-to-point traffic on comm_
    for (int step = 1; step < size_; ++step) {
      const int to = (rank_ + step) % size_, from = (rank_ - step + size_) % size_;
      const auto d = static_cast<std::size_t>(to);
      detail::mpi_check(MPI_Sendrecv(input + std::int64_t{displacements_[d]} * element, counts_[d], type, to, tag,
                                     received, counts_[r], type, from, tag, comm_, MPI_STATUS_IGNORE),
                        "MPI_Sendrecv");
      if (own > 0 && !detail::simulation::skip_local_data())
        detail::mpi_check(MPI_Reduce_local(received, out, counts_[r], type, detail::mpi_op(op)), "MPI_Reduce_local");
    }
    detail::simulation::deallocate(received);
  }
#endif

  void do_broadcast(void* buffer, std::int64_t n, Datatype t, int root) {
    detail::mpi_check(MPI_Bcast(buffer, detail::mpi_count(n, "broadcast"), detail::mpi_datatype(t), root, comm_),
                      "MPI_Bcast");
  }
  void do_send(const void* data, std::int64_t n, Datatype t, int dest, int tag) {
    detail::mpi_check(MPI_Send(data, detail::mpi_count(n, "send"), detail::mpi_datatype(t), dest, tag, comm_),
                      "MPI_Send");
  }
  void do_recv(void* data, std::int64_t n, Datatype t, int source, int tag) {
    const int count = detail::mpi_count(n, "recv");
    const MPI_Datatype type = detail::mpi_datatype(t);
    MPI_Status status;
    detail::mpi_check(MPI_Recv(data, count, type, source, tag, comm_, &status), "MPI_Recv");
    detail::check_received(status, type, count, source, tag, "recv");
  }
  void do_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n, int source,
                   Datatype t, int tag) {
    const int count = detail::mpi_count(recv_n, "sendrecv's receive");
    const MPI_Datatype type = detail::mpi_datatype(t);
    MPI_Status status;
    detail::mpi_check(MPI_Sendrecv(send, detail::mpi_count(send_n, "sendrecv's send"), type, dest, tag, recv, count,
                                   type, source, tag, comm_, &status),
                      "MPI_Sendrecv");
    detail::check_received(status, type, count, source, tag, "sendrecv");
  }

  static void wait_request(void* state) {
    auto& s = *static_cast<detail::MpiRequestState*>(state);
    MPI_Status statuses[2];
    if (const int code = MPI_Waitall(2, s.requests, statuses); code != MPI_SUCCESS) {
      if (code == MPI_ERR_IN_STATUS) {  // name the half that failed
        if (statuses[0].MPI_ERROR != MPI_SUCCESS)
          detail::throw_mpi_error(statuses[0].MPI_ERROR, "MPI_Irecv (completed by MPI_Waitall)");
        if (statuses[1].MPI_ERROR != MPI_SUCCESS)
          detail::throw_mpi_error(statuses[1].MPI_ERROR, "MPI_Isend (completed by MPI_Waitall)");
      }
      detail::throw_mpi_error(code, "MPI_Waitall");
    }
    detail::check_received(statuses[0], s.type, s.expected, s.source, s.tag, "start_sendrecv");
  }
  static void abandon_request(void* state) noexcept {
    auto& s = *static_cast<detail::MpiRequestState*>(state);
    if (!detail::mpi_usable()) return;
    // While unwinding, the receive buffer is about to die: cancel the receive rather than wait for it.
    if (std::uncaught_exceptions() > 0 && s.requests[0] != MPI_REQUEST_NULL) MPI_Cancel(&s.requests[0]);
    MPI_Waitall(2, s.requests, MPI_STATUSES_IGNORE);  // errors cannot be reported from a destructor
  }
  static constexpr Request::Ops request_ops{&wait_request, &abandon_request};

  Request do_start_sendrecv(const void* send, std::int64_t send_n, int dest, void* recv, std::int64_t recv_n,
                            int source, Datatype t, int tag) {
    detail::MpiRequestState state{{MPI_REQUEST_NULL, MPI_REQUEST_NULL},
                                  detail::mpi_datatype(t),
                                  detail::mpi_count(recv_n, "start_sendrecv's receive"),
                                  source,
                                  tag};
    const int send_count = detail::mpi_count(send_n, "start_sendrecv's send");
    detail::mpi_check(MPI_Irecv(recv, state.expected, state.type, source, tag, comm_, &state.requests[0]), "MPI_Irecv");
    if (const int code = MPI_Isend(send, send_count, state.type, dest, tag, comm_, &state.requests[1]);
        code != MPI_SUCCESS) {
      abandon_request(&state);
      detail::throw_mpi_error(code, "MPI_Isend");
    }
    return Request(&request_ops, state);
  }
  void do_barrier() { detail::mpi_check(MPI_Barrier(comm_), "MPI_Barrier"); }

  MpiCommunicator do_create_group(std::span<const int> ranks) {
    MPI_Group parent = MPI_GROUP_NULL;
    MPI_Group members = MPI_GROUP_NULL;
    MPI_Comm group = MPI_COMM_NULL;
    int code = MPI_Comm_group(comm_, &parent);
    const char* call = "MPI_Comm_group";
    if (code == MPI_SUCCESS) {
      code = MPI_Group_incl(parent, static_cast<int>(ranks.size()), ranks.data(), &members);
      call = "MPI_Group_incl";
    }
    if (code == MPI_SUCCESS) {
      code = MPI_Comm_create_group(comm_, members, /*tag=*/0, &group);
      call = "MPI_Comm_create_group";
    }
    if (members != MPI_GROUP_NULL) MPI_Group_free(&members);
    if (parent != MPI_GROUP_NULL) MPI_Group_free(&parent);
    detail::mpi_check(code, call);
    return MpiCommunicator(Owned{}, group);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  std::vector<int> counts_;         // scratch for the v-collectives, one per rank
  std::vector<int> displacements_;  // idem
};

/// Lets an MPI_Comm stand for a Communicator, as in `ProcessGroupMesh<Grid> groups{MPI_COMM_WORLD};`:
/// the result works on a duplicate of it.
template <>
struct communicator_adapter<MPI_Comm> {
  /// An MpiCommunicator on a duplicate of `comm` (collective over comm).
  static MpiCommunicator adapt(MPI_Comm comm) { return MpiCommunicator(comm); }
};

static_assert(Communicator<MpiCommunicator>);

#if SHARDWISE_EXTERN_RUNTIME
extern template struct detail::AnyCommModel<MpiCommunicator>;
#endif

// ---- definitions (compiled once under SHARDWISE_SEPARATE_COMPILATION) ----------------------
#if SHARDWISE_RUNTIME_DEFINITIONS
SHARDWISE_DECL MpiCommunicator::MpiCommunicator(MPI_Comm comm) {
  if (!detail::mpi_usable())
    throw CommError("shardwise::MpiCommunicator: MPI is not initialized (or already finalized); call MPI_Init first");
  if (comm == MPI_COMM_NULL) throw std::invalid_argument("shardwise::MpiCommunicator: the communicator is MPI_COMM_NULL");
  detail::mpi_check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  adopt();
}

SHARDWISE_DECL void MpiCommunicator::adopt() {
  try {
    detail::mpi_check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    detail::mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    detail::mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    counts_.resize(static_cast<std::size_t>(size_));
    displacements_.resize(static_cast<std::size_t>(size_));
  } catch (...) {
    release();
    throw;
  }
}
#endif

}  // namespace shardwise
