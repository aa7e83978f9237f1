// shardwise/comm/collective_api.hpp: the typed public API every backend shares.
//
// A backend implements the untyped operations of comm/operations.hpp as private members
// (do_all_reduce, do_all_gather, ...: raw pointers, element counts, a Datatype) and two
// public ones, rank() and size(); it derives from CollectiveApi<Backend> and befriends
// detail::RawAccess. CollectiveApi turns typed buffers (std::span, std::vector, any
// contiguous range of float, double, int or std::int64_t) into those calls after
// checking every size, so each backend, the counting wrapper and AnyCommunicator get
// one identical API without duplicating it.
//
// Semantics (group ranks 0..size()-1; every member calls a collective in the same order):
//   all_reduce(in, out, op)            out[i] = op over ranks of in[i]; all_reduce(inout, op) in place
//   all_gather(in, out)                out = concatenation of every rank's in, in rank order
//   all_gather_v(in, out, counts)      the same with counts[r] elements from rank r
//   reduce_scatter(in, out, counts, op)  in has sum(counts); rank r gets the reduced segment r
//   reduce_scatter_block(in, out, op)  equal segments of out.size()
//   broadcast(buffer, root)            root's buffer to everyone
//   send / recv / sendrecv             a message must be received with exactly its size
//   start_sendrecv(...) -> Request     nonblocking sendrecv; buffers live until wait()
//   barrier()
//   create_group(ranks)                collective over the listed members only
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "shardwise/comm/operations.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/comm/request.hpp"
#include "shardwise/comm/types.hpp"

namespace shardwise::detail {

/// A contiguous range of CommScalar that can be read.
template <typename R>
concept input_buffer = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                       CommScalar<std::remove_cv_t<std::ranges::range_value_t<R>>>;

/// A contiguous range of CommScalar that can be written.
template <typename R>
concept output_buffer =
    input_buffer<R> && !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

/// A buffer that outlives the call: a view (span) or an lvalue, not a temporary container.
template <typename R>
concept lasting_buffer = std::is_lvalue_reference_v<R> || std::ranges::borrowed_range<R>;

template <typename R>
using scalar_of = std::remove_cv_t<std::ranges::range_value_t<R>>;

template <typename A, typename B>
concept same_scalar = std::same_as<scalar_of<A>, scalar_of<B>>;

template <input_buffer R>
[[nodiscard]] std::span<const scalar_of<R>> input_span(R&& r) {
  return {std::ranges::data(r), std::ranges::size(r)};
}
template <output_buffer R>
[[nodiscard]] std::span<scalar_of<R>> output_span(R&& r) {
  return {std::ranges::data(r), std::ranges::size(r)};
}

[[noreturn]] inline void throw_size_mismatch(const char* function, const char* argument,
                                             std::int64_t actual, std::int64_t expected,
                                             const std::string& rule) {
  fail({"shardwise::", function, ": `", argument, "` has ", actual, " elements but must have ", rule, " = ", expected});
}

inline void check_size(const char* function, const char* argument, std::size_t actual,
                       std::int64_t expected, const char* rule) {
  if (static_cast<std::int64_t>(actual) != expected) [[unlikely]]
    throw_size_mismatch(function, argument, static_cast<std::int64_t>(actual), expected, rule);
}

/// Complex numbers have no order: their reductions are sums only.
template <typename T>
void check_reduction(const char* function, ReduceOp op) {
  if constexpr (is_complex_v<T>)
    if (op != ReduceOp::sum) [[unlikely]]
      fail({"shardwise::", function, ": ", name_of(op),
            " of complex numbers is not defined (they have no order); reduce them with ReduceOp::sum"});
}

inline void check_rank(const char* function, const char* argument, int rank, int size) {
  if (rank < 0 || rank >= size) [[unlikely]]
    fail({"shardwise::", function, ": `", argument, "` is ", rank, " but the communicator has ranks 0..", size - 1});
}

inline void check_tag(const char* function, int tag) {
  if (tag < 0) [[unlikely]]
    fail({"shardwise::", function, ": the tag is ", tag, "; tags must be non-negative"});
}

/// Sum of `counts`, after checking there is one per rank and none is negative.
inline std::int64_t checked_total(const char* function, std::span<const std::int64_t> counts, int size) {
  check_size(function, "counts", counts.size(), size, "size()");
  std::int64_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] < 0) [[unlikely]]
      fail({"shardwise::", function, ": counts[", r, "] is ", counts[r], "; counts must be non-negative"});
    total += counts[r];
  }
  return total;
}

/// Throws unless the two buffers are disjoint (or `allowed` says where `in` may sit inside `out`).
template <typename T>
void check_disjoint(const char* function, std::span<const T> in, std::span<T> out,
                    const T* allowed = nullptr) {
  if (in.empty() || out.empty() || in.data() == allowed) return;
  const std::less<const T*> before;
  const bool disjoint = !before(in.data(), out.data() + out.size()) || !before(out.data(), in.data() + in.size());
  if (!disjoint) [[unlikely]]
    fail({"shardwise::", function, ": `in` and `out` overlap; use separate buffers (or the in-place form)"});
}

}  // namespace shardwise::detail

namespace shardwise {

/// The typed operations every communicator has, written once for every backend (CRTP).
///
/// MpiCommunicator, VirtualCommunicator, CountingCommunicator and AnyCommunicator derive from
/// it, and so does a new backend (the Communicator concept requires it): the backend supplies
/// its rank and size and the untyped operations of comm/operations.hpp, and this class checks
/// the buffers' sizes before calling them.
template <typename Derived>
class CollectiveApi {
 public:
  /// out[i] = op over all ranks of in[i]. `in` and `out` may be the same buffer.
  template <detail::input_buffer In, detail::output_buffer Out>
    requires detail::same_scalar<In, Out>
  void all_reduce(In&& in, Out&& out, ReduceOp op = ReduceOp::sum) {
    using T = detail::scalar_of<In>;
    const auto i = detail::input_span(in);
    const auto o = detail::output_span(out);
    detail::check_size("all_reduce", "out", o.size(), static_cast<std::int64_t>(i.size()), "in.size()");
    detail::check_disjoint<T>("all_reduce", i, o, o.data());
    detail::check_reduction<T>("all_reduce", op);
    detail::RawAccess::all_reduce(self(), i.data(), o.data(), ssize(i), detail::datatype_of<T>, op);
  }

  /// In-place all_reduce.
  template <detail::output_buffer InOut>
  void all_reduce(InOut&& inout, ReduceOp op = ReduceOp::sum) {
    const auto b = detail::output_span(inout);
    detail::check_reduction<detail::scalar_of<InOut>>("all_reduce", op);
    detail::RawAccess::all_reduce(self(), b.data(), b.data(), ssize(b), detail::datatype_of<detail::scalar_of<InOut>>,
                                  op);
  }

  /// out = every rank's `in`, in rank order; out.size() == size() * in.size(). In place when
  /// `in` is this rank's block of `out`.
  template <detail::input_buffer In, detail::output_buffer Out>
    requires detail::same_scalar<In, Out>
  void all_gather(In&& in, Out&& out) {
    using T = detail::scalar_of<In>;
    const auto i = detail::input_span(in);
    const auto o = detail::output_span(out);
    const std::int64_t n = ssize(i);
    detail::check_size("all_gather", "out", o.size(), n * my_size(), "size() * in.size()");
    detail::check_disjoint<T>("all_gather", i, o, o.data() + n * my_rank());
    detail::RawAccess::all_gather(self(), i.data(), o.data(), n, detail::datatype_of<T>);
  }

  /// counts[r] elements from rank r, concatenated in rank order; in.size() == counts[rank()].
  template <detail::input_buffer In, detail::output_buffer Out>
    requires detail::same_scalar<In, Out>
  void all_gather_v(In&& in, Out&& out, std::span<const std::int64_t> counts) {
    using T = detail::scalar_of<In>;
    const auto i = detail::input_span(in);
    const auto o = detail::output_span(out);
    const std::int64_t total = detail::checked_total("all_gather_v", counts, my_size());
    detail::check_size("all_gather_v", "in", i.size(), counts[static_cast<std::size_t>(my_rank())], "counts[rank()]");
    detail::check_size("all_gather_v", "out", o.size(), total, "sum(counts)");
    std::int64_t offset = 0;
    for (int r = 0; r < my_rank(); ++r) offset += counts[static_cast<std::size_t>(r)];
    detail::check_disjoint<T>("all_gather_v", i, o, o.data() + offset);
    detail::RawAccess::all_gather_v(self(), i.data(), o.data(), counts, detail::datatype_of<T>);
  }

  /// Like MPI_Reduce_scatter: `in` holds sum(counts) elements; rank r receives the reduced
  /// segment r (counts[r] elements).
  template <detail::input_buffer In, detail::output_buffer Out>
    requires detail::same_scalar<In, Out>
  void reduce_scatter(In&& in, Out&& out, std::span<const std::int64_t> counts,
                      ReduceOp op = ReduceOp::sum) {
    using T = detail::scalar_of<In>;
    const auto i = detail::input_span(in);
    const auto o = detail::output_span(out);
    const std::int64_t total = detail::checked_total("reduce_scatter", counts, my_size());
    detail::check_size("reduce_scatter", "in", i.size(), total, "sum(counts)");
    detail::check_size("reduce_scatter", "out", o.size(), counts[static_cast<std::size_t>(my_rank())],
                       "counts[rank()]");
    detail::check_disjoint<T>("reduce_scatter", i, o);
    detail::check_reduction<T>("reduce_scatter", op);
    detail::RawAccess::reduce_scatter(self(), i.data(), o.data(), counts, detail::datatype_of<T>, op);
  }

  /// reduce_scatter with equal segments: in.size() == size() * out.size().
  template <detail::input_buffer In, detail::output_buffer Out>
    requires detail::same_scalar<In, Out>
  void reduce_scatter_block(In&& in, Out&& out, ReduceOp op = ReduceOp::sum) {
    using T = detail::scalar_of<In>;
    const auto i = detail::input_span(in);
    const auto o = detail::output_span(out);
    detail::check_size("reduce_scatter_block", "in", i.size(), ssize(o) * my_size(), "size() * out.size()");
    detail::check_disjoint<T>("reduce_scatter_block", i, o);
    detail::check_reduction<T>("reduce_scatter_block", op);
    detail::RawAccess::reduce_scatter_block(self(), i.data(), o.data(), ssize(o), detail::datatype_of<T>, op);
  }

  /// Copies root's buffer into everyone's; every rank passes a buffer of the same size.
  template <detail::output_buffer Buffer>
  void broadcast(Buffer&& buffer, int root) {
    const auto b = detail::output_span(buffer);
    detail::check_rank("broadcast", "root", root, my_size());
    detail::RawAccess::broadcast(self(), b.data(), ssize(b), detail::datatype_of<detail::scalar_of<Buffer>>, root);
  }

  /// Sends `data` to group rank `dest`. The receiver must post a recv of exactly this size.
  /// Like MPI_Send it may block until that receive is posted (the virtual cluster never blocks
  /// here): exchange with sendrecv or start_sendrecv, not with two sends.
  template <detail::input_buffer Data>
  void send(Data&& data, int dest, int tag) {
    const auto d = detail::input_span(data);
    detail::check_rank("send", "dest", dest, my_size());
    detail::check_tag("send", tag);
    detail::RawAccess::send(self(), d.data(), ssize(d), detail::datatype_of<detail::scalar_of<Data>>, dest, tag);
  }

  /// Receives a message of exactly data.size() elements from `source` with `tag`.
  template <detail::output_buffer Data>
  void recv(Data&& data, int source, int tag) {
    const auto d = detail::output_span(data);
    detail::check_rank("recv", "source", source, my_size());
    detail::check_tag("recv", tag);
    detail::RawAccess::recv(self(), d.data(), ssize(d), detail::datatype_of<detail::scalar_of<Data>>, source, tag);
  }

  /// Sends to `dest` and receives from `source` at once (no deadlock in a ring shift).
  template <detail::input_buffer Send, detail::output_buffer Recv>
    requires detail::same_scalar<Send, Recv>
  void sendrecv(Send&& send, int dest, Recv&& recv, int source, int tag) {
    using T = detail::scalar_of<Send>;
    const auto s = detail::input_span(send);
    const auto r = detail::output_span(recv);
    detail::check_rank("sendrecv", "dest", dest, my_size());
    detail::check_rank("sendrecv", "source", source, my_size());
    detail::check_tag("sendrecv", tag);
    detail::check_disjoint<T>("sendrecv", s, r);
    detail::RawAccess::sendrecv(self(), s.data(), ssize(s), dest, r.data(), ssize(r), source, detail::datatype_of<T>,
                                tag);
  }

  /// Nonblocking sendrecv: both buffers must stay alive and untouched until Request::wait().
  template <detail::input_buffer Send, detail::output_buffer Recv>
    requires detail::same_scalar<Send, Recv> && detail::lasting_buffer<Send> && detail::lasting_buffer<Recv>
  [[nodiscard]] Request start_sendrecv(Send&& send, int dest, Recv&& recv, int source, int tag) {
    using T = detail::scalar_of<Send>;
    const auto s = detail::input_span(send);
    const auto r = detail::output_span(recv);
    detail::check_rank("start_sendrecv", "dest", dest, my_size());
    detail::check_rank("start_sendrecv", "source", source, my_size());
    detail::check_tag("start_sendrecv", tag);
    detail::check_disjoint<T>("start_sendrecv", s, r);
    return detail::RawAccess::start_sendrecv(self(), s.data(), ssize(s), dest, r.data(), ssize(r), source,
                                     detail::datatype_of<T>, tag);
  }

  /// Returns when every rank has called barrier().
  void barrier() { detail::RawAccess::barrier(self()); }

  /// A communicator over the listed group ranks: its rank i is ranks[i] here (order matters).
  /// Called by the listed members only, all with the same list; others must not call it.
  [[nodiscard]] Derived create_group(std::span<const int> ranks) {
    if (ranks.empty()) [[unlikely]]
      throw std::invalid_argument("shardwise::create_group: the member list is empty");
    bool member = false;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] < 0 || ranks[i] >= my_size()) [[unlikely]]
        detail::fail({"shardwise::create_group: ranks[", i, "] is ", ranks[i], " but the communicator has ranks 0..",
              my_size() - 1});
      for (std::size_t j = 0; j < i; ++j)
        if (ranks[j] == ranks[i]) [[unlikely]]
          detail::fail({"shardwise::create_group: rank ", ranks[i], " is listed twice; list every member once"});
      member = member || ranks[i] == my_rank();
    }
    if (!member) [[unlikely]]
      detail::fail({"shardwise::create_group: the calling rank ", my_rank(),
            " is not in the member list; only the members call create_group"});
    return detail::RawAccess::create_group(self(), ranks);
  }

 private:
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
  [[nodiscard]] int my_rank() const noexcept { return static_cast<const Derived&>(*this).rank(); }
  [[nodiscard]] int my_size() const noexcept { return static_cast<const Derived&>(*this).size(); }
  template <typename T>
  static std::int64_t ssize(std::span<T> s) noexcept {
    return static_cast<std::int64_t>(s.size());
  }
};

}  // namespace shardwise
