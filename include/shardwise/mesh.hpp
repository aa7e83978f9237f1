/// @file
/// shardwise/mesh.hpp: the process mesh as a type.
///
/// A Mesh is a list of named axes, each with an extent. Ranks are laid out in C
/// order (the last axis varies fastest), as in ColossalAI's ProcessGroupMesh and
/// numpy's ravel_multi_index. Like mdspan's extents, an extent may be
/// dynamic_extent and given when the Mesh object is built; everything else is
/// constexpr. This header is pure compile-time: no MPI, no Eigen.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "shardwise/detail/fixed_string.hpp"
#include "shardwise/detail/pack.hpp"

/// Compile-time tensor parallelism: meshes and shardings as types, the matmul policies
/// they select, communicators and neural-network layers. Names in shardwise::detail are
/// internal and may change in any release.
namespace shardwise {

/// A string literal as a template argument: the type of axis names (Axis<"x", 2>, Split<"x">).
using detail::fixed_string;

/// Extent of an axis that is only known at run time (given to the Mesh constructor).
inline constexpr std::size_t dynamic_extent = std::numeric_limits<std::size_t>::max();

/// One named axis of a mesh: Axis<"tp", 4>, or Axis<"dp", dynamic_extent>.
template <fixed_string Name, std::size_t Extent>
struct Axis {
  static_assert(Name.size() > 0, "shardwise::Axis: an axis name cannot be empty; write Axis<\"x\", 2>");
  static_assert(Extent != 0,
                "shardwise::Axis: an axis extent of 0 is not allowed; every axis needs at least one "
                "process (write dynamic_extent for an extent known only at run time)");
  static_assert(Extent == dynamic_extent || Extent <= std::size_t{std::numeric_limits<int>::max()},
                "shardwise::Axis: the extent does not fit in an int (MPI counts ranks with int)");

  /// The axis name, as sharding types and group lookups spell it ("tp").
  static constexpr std::string_view name = Name.view();
  /// The same name as a template argument (to build a Split<...> naming this axis).
  static constexpr auto fixed_name = Name;
  /// The extent given in the type, or dynamic_extent when it comes at run time.
  static constexpr std::size_t static_extent = Extent;
};

/// What ravel/unravel do with an index outside the mesh (numpy's modes).
enum class IndexMode {
  raise,  ///< throw std::out_of_range (a compile error in a constant expression)
  wrap,   ///< wrap around, Python style: -1 is the last index
  clip,   ///< clamp to the nearest valid index
};

namespace detail {

template <typename T>
inline constexpr bool is_axis_v = false;
template <fixed_string Name, std::size_t Extent>
inline constexpr bool is_axis_v<Axis<Name, Extent>> = true;

template <std::size_t N>
constexpr bool all_distinct(const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = i + 1; j < N; ++j)
      if (names[i] == names[j]) return false;
  return true;
}

constexpr int apply_index_mode(long long index, int extent, IndexMode mode, const char* what) {
  if (index >= 0 && index < extent) return static_cast<int>(index);
  switch (mode) {
    case IndexMode::wrap: {
      long long wrapped = index % extent;
      return static_cast<int>(wrapped < 0 ? wrapped + extent : wrapped);
    }
    case IndexMode::clip:
      return index < 0 ? 0 : extent - 1;
    case IndexMode::raise:
      break;
  }
  throw std::out_of_range(what);
}

inline constexpr long long int_max = std::numeric_limits<int>::max();

/// Product of the static extents (a dynamic axis counts as 1), or -1 once it exceeds an int:
/// computed step by step so that it cannot overflow itself.
template <std::size_t N>
constexpr long long static_rank_count(const std::array<std::size_t, N>& extents) {
  long long product = 1;
  for (std::size_t e : extents) {
    if (e == dynamic_extent) continue;
    if (e == 0) return 0;  // Axis reports it
    if (static_cast<long long>(e) > int_max / product) return -1;
    product *= static_cast<long long>(e);
  }
  return product;
}

/// The text of an extent given at run time, whatever its integer type.
template <std::integral T>
std::string extent_text(T value) {
  if constexpr (std::is_signed_v<T>)
    return std::to_string(static_cast<long long>(value));
  else
    return std::to_string(static_cast<unsigned long long>(value));
}

/// Not constexpr: reached only on the error path, never in a constant expression.
[[noreturn]] inline void throw_mesh_error(const std::string& what) {
  throw std::invalid_argument("shardwise::Mesh: " + what);
}

}  // namespace detail

/// Never defined: a misspelt axis name is reported as this incomplete type, which holds the
/// name, so that the name is on the first error line with both g++ and clang++ (a
/// static_assert's message cannot hold it); the static_assert that follows says how to fix it.
template <fixed_string Name>
struct mesh_has_no_axis_named;

namespace detail {
/// Complete when Known; otherwise deriving from the incomplete mesh_has_no_axis_named<Name> is
/// the error that names Name. Used as sizeof(unknown_axis_report<Name, Mesh::has_axis(...)>).
template <fixed_string Name, bool Known>
struct unknown_axis_report {};
template <fixed_string Name>
struct unknown_axis_report<Name, false> : mesh_has_no_axis_named<Name> {};

/// An axis name used with a mesh (axis_index, group_along), checked: the name first, then the
/// message. A class, not two static_asserts in the caller's body: clang reports nothing more
/// of a function body after its first error.
template <fixed_string Name, bool Known>
struct checked_mesh_axis_name {
  static_assert(sizeof(unknown_axis_report<Name, Known>) > 0);
  static_assert(Known,
                "shardwise::Mesh: the mesh has no axis of that name (the error above names it); check the "
                "spelling against the Mesh's Axis<\"name\", extent> list");
};
}  // namespace detail

/// A mesh of processes: Mesh<Axis<"x", 2>, Axis<"y", 4>> has 8 ranks,
/// rank = x * 4 + y.
template <typename... Axes>
class Mesh {
  static_assert(sizeof...(Axes) > 0, "shardwise::Mesh needs at least one Axis<\"name\", extent>");
  static_assert((detail::is_axis_v<Axes> && ...),
                "shardwise::Mesh: every parameter must be an Axis<\"name\", extent>");

 public:
  /// Number of axes.
  static constexpr std::size_t ndim = sizeof...(Axes);
  /// A position in the mesh, one index per axis.
  using coordinate_type = std::array<int, ndim>;

  /// Axis names, in axis order.
  static constexpr std::array<std::string_view, ndim> names{Axes::name...};
  /// Extents as the types give them (dynamic_extent where given at run time).
  static constexpr std::array<std::size_t, ndim> static_extents{Axes::static_extent...};
  /// How many extents the constructor must be given.
  static constexpr std::size_t dynamic_count =
      (std::size_t{0} + ... + std::size_t{Axes::static_extent == dynamic_extent});
  /// True when every extent is in the type (then Mesh{} needs no arguments).
  static constexpr bool is_static = dynamic_count == 0;
  /// The Axis<name, extent> type of axis number I.
  template <std::size_t I>
  using axis_type = typename detail::pack_element<I, Axes...>::type;

  static_assert(detail::all_distinct(names),
                "shardwise::Mesh: two axes have the same name; give every axis a distinct name");

  // Each axis fits in an int (Axis checks it); their product must too, since ranks are ints.
  // Dynamic axes count as 1 here: they can only make the mesh larger.
  static_assert(detail::static_rank_count(static_extents) >= 0,
                "shardwise::Mesh: the product of the static extents, the number of ranks, does not fit in "
                "an int (MPI counts ranks with int); make the extents smaller");

  /// A fully static mesh needs no arguments.
  constexpr Mesh() requires is_static {
    for (std::size_t i = 0; i < ndim; ++i) extents_[i] = static_cast<int>(static_extents[i]);
  }

  /// One argument per dynamic_extent axis, in axis order: Mesh<Axis<"dp", dynamic_extent>,
  /// Axis<"tp", 2>>{4}. Throws std::invalid_argument for an extent below 1 or above what an
  /// int holds, and for a mesh of more ranks than an int holds.
  ///
  /// Any other list of arguments also lands here (not on a constraint failure among several
  /// overloads), so that the first error is one static_assert saying what to write instead.
  template <typename... Extents>
    requires(sizeof...(Extents) > 0 && !(std::same_as<std::remove_cvref_t<Extents>, Mesh> || ...))
  constexpr explicit Mesh(Extents... dynamic_extents) {
    static_assert(dynamic_count > 0 || sizeof...(Extents) == 0,
                  "shardwise::Mesh: this mesh has no dynamic_extent axis, so it takes no extents; write "
                  "Grid grid; or Grid grid{}");
    static_assert(dynamic_count == 0 || sizeof...(Extents) == dynamic_count,
                  "shardwise::Mesh: give one extent per dynamic_extent axis, in axis order, and no more");
    static_assert((std::integral<Extents> && ...), "shardwise::Mesh: an extent must be an integer");
    if constexpr (sizeof...(Extents) == dynamic_count && (std::integral<Extents> && ...)) {
      for (std::size_t i = 0; i < ndim; ++i)
        if (static_extents[i] != dynamic_extent) extents_[i] = static_cast<int>(static_extents[i]);
      std::size_t axis = 0;
      (set_dynamic_extent(axis, dynamic_extents), ...);
      // Each extent fits in an int; the product is checked step by step so that it cannot
      // overflow, and size() never can.
      long long product = 1;
      for (int e : extents_) {
        if (e > detail::int_max / product) throw_too_many_ranks();
        product *= e;
      }
    }
  }

  /// Index of the axis called `name`, or -1 when there is none.
  [[nodiscard]] static constexpr int index_of(std::string_view name) noexcept {
    for (std::size_t i = 0; i < ndim; ++i)
      if (names[i] == name) return static_cast<int>(i);
    return -1;
  }
  /// Whether the mesh has an axis called `name`.
  [[nodiscard]] static constexpr bool has_axis(std::string_view name) noexcept {
    return index_of(name) >= 0;
  }
  /// Index of an axis known at compile time; a misspelt name does not compile.
  template <fixed_string Name>
  [[nodiscard]] static constexpr std::size_t axis_index() noexcept {
    // The name first (mesh_has_no_axis_named<Name>), then what to do.
    static_assert(sizeof(detail::checked_mesh_axis_name<Name, has_axis(Name.view())>) > 0);
    return static_cast<std::size_t>(index_of(Name.view()));
  }

  /// Extent of axis number `axis`; throws std::out_of_range past the last axis.
  [[nodiscard]] constexpr int extent(std::size_t axis) const { return extents_.at(axis); }
  /// Extent by name; throws std::out_of_range for an unknown name.
  [[nodiscard]] constexpr int extent(std::string_view name) const {
    const int i = index_of(name);
    if (i < 0) throw std::out_of_range("shardwise::Mesh::extent: no axis of that name");
    return extents_[static_cast<std::size_t>(i)];
  }
  /// All extents, in axis order (dynamic ones as given to the constructor).
  [[nodiscard]] constexpr const std::array<int, ndim>& extents() const noexcept { return extents_; }

  /// Number of processes in the mesh. Never overflows: the constructors reject a mesh of
  /// more ranks than an int holds.
  [[nodiscard]] constexpr int size() const noexcept {
    int product = 1;
    for (int e : extents_) product *= e;
    return product;
  }

  /// Coordinate -> flat rank (C order). `mode` says what an out-of-range index does.
  [[nodiscard]] constexpr int ravel(const coordinate_type& coordinate,
                                    IndexMode mode = IndexMode::raise) const {
    int flat = 0;
    for (std::size_t i = 0; i < ndim; ++i)
      flat = flat * extents_[i] +
             detail::apply_index_mode(coordinate[i], extents_[i], mode,
                                      "shardwise::Mesh::ravel: coordinate out of range");
    return flat;
  }

  /// Flat rank -> coordinate (C order). `mode` applies to the flat index.
  [[nodiscard]] constexpr coordinate_type unravel(long long flat,
                                                  IndexMode mode = IndexMode::raise) const {
    int rest = detail::apply_index_mode(flat, size(), mode,
                                        "shardwise::Mesh::unravel: rank out of range");
    coordinate_type coordinate{};
    for (std::size_t i = ndim; i-- > 0;) {
      coordinate[i] = rest % extents_[i];
      rest /= extents_[i];
    }
    return coordinate;
  }

  /// Same extents (the axes are already equal, being part of the type).
  friend constexpr bool operator==(const Mesh& a, const Mesh& b) { return a.extents_ == b.extents_; }

 private:
  /// Stores `value` as the extent of the next dynamic axis after `axis`, moving `axis` past it.
  template <std::integral T>
  constexpr void set_dynamic_extent(std::size_t& axis, T value) {
    while (static_extents[axis] != dynamic_extent) ++axis;
    bool below_one = false, above_int = false;
    if constexpr (std::is_signed_v<T>) {
      below_one = static_cast<long long>(value) < 1;
      above_int = static_cast<long long>(value) > detail::int_max;
    } else {
      below_one = value == 0;
      above_int = static_cast<unsigned long long>(value) > static_cast<unsigned long long>(detail::int_max);
    }
    if (below_one)
      detail::throw_mesh_error("axis \"" + std::string(names[axis]) + "\": an extent must be at least 1, got " +
                               detail::extent_text(value));
    if (above_int)
      detail::throw_mesh_error("axis \"" + std::string(names[axis]) + "\": extent " + detail::extent_text(value) +
                               " does not fit in an int (MPI counts ranks with int)");
    extents_[axis++] = static_cast<int>(value);
  }

  /// The message names the rank count exactly when it fits in 64 bits.
  [[noreturn]] void throw_too_many_ranks() const {
    unsigned long long count = 1;
    bool exact = true;
    std::string shape;
    for (std::size_t i = 0; i < ndim; ++i) {
      const auto e = static_cast<unsigned long long>(extents_[i]);
      exact = exact && count <= std::numeric_limits<unsigned long long>::max() / e;
      if (exact) count *= e;
      shape += (i == 0 ? "" : " x ") + std::string(names[i]) + "=" + std::to_string(extents_[i]);
    }
    detail::throw_mesh_error("the mesh would have " + (exact ? std::to_string(count) : std::string("2^64 or more")) +
                             " ranks (" + shape + "), more than an int holds (" + std::to_string(detail::int_max) +
                             "); make the extents smaller");
  }

  std::array<int, ndim> extents_{};
};

namespace detail {
template <typename T>
inline constexpr bool is_mesh_v = false;
template <typename... Axes>
inline constexpr bool is_mesh_v<Mesh<Axes...>> = true;
}  // namespace detail

/// Satisfied by every Mesh<...> type.
template <typename T>
concept MeshType = detail::is_mesh_v<T>;

}  // namespace shardwise
